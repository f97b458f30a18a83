//! Loading a project's configuration: every file found in it, read and merged into one
//! set of servers.

use super::*;

impl ProjectConfig {
    /// Reads the configs found in `project_dir`, or only `explicit` when given.
    pub fn load(project_dir: &Path, explicit: Option<&Path>) -> Result<Self, ConfigError> {
        ProjectConfig::load_preferring(project_dir, explicit, &BTreeMap::new())
    }

    /// [`ProjectConfig::load`], taking a server defined differently in two files from
    /// the file `prefer` names for it (`[config] prefer` in mcp-lock.toml, paths
    /// relative to the project directory).
    pub fn load_preferring(
        project_dir: &Path,
        explicit: Option<&Path>,
        prefer: &BTreeMap<String, PathBuf>,
    ) -> Result<Self, ConfigError> {
        let explicit: Vec<PathBuf> = explicit.map(Path::to_path_buf).into_iter().collect();
        ProjectConfig::load_files(project_dir, &explicit, prefer)
    }

    /// [`ProjectConfig::load_preferring`] of these files (all the user-level files of
    /// `--user CLIENT`), or of the configs found in `project_dir` when there are none.
    pub fn load_files(
        project_dir: &Path,
        explicit: &[PathBuf],
        prefer: &BTreeMap<String, PathBuf>,
    ) -> Result<Self, ConfigError> {
        let explicit = (!explicit.is_empty()).then_some(explicit);
        let files: Vec<PathBuf> = match explicit {
            Some(paths) => paths.to_vec(),
            None => discover(project_dir),
        };
        if files.is_empty() {
            return Err(ConfigError::NotFound {
                dir: project_dir.display().to_string(),
            });
        }
        // Each server with the file, scope and `found` entry it was taken from.
        let mut servers: Vec<(ServerSpec, PathBuf, Option<Scope>, usize)> = Vec::new();
        // Where each name is in `servers`: a search per entry is quadratic in the
        // servers of a large config.
        let mut index: HashMap<String, usize> = HashMap::new();
        let mut found: Vec<Found> = Vec::new();
        // opencode merges its files into one config before reading it: read together.
        let layers = match explicit {
            None => opencode_layers(project_dir),
            Some(_) => Vec::new(),
        };
        let mut reads: Vec<(PathBuf, ConfigFile)> = Vec::new();
        let mut modifiers = settings::Modifiers::new(project_dir, &|v| std::env::var(v).ok());
        for file in &files {
            if layers.len() > 1 && layers.contains(file) {
                if Some(file) == layers.first() {
                    reads.extend(read_opencode_layers(&layers, project_dir)?);
                }
                continue;
            }
            // A file of a folder `--user` reads whole (Amazon Q's agents, Continue's
            // `mcpServers`) is bounded as a discovered file is; a file named on its
            // own (`--config`, `~/.claude.json`) is read as before.
            let in_folder = is_amazonq_agent(file)
                || file.parent().and_then(Path::file_name) == Some("mcpServers".as_ref());
            let text = match explicit {
                Some(_) if !in_folder => {
                    crate::base::files::read_regular_text(file, MAX_NAMED_BYTES).map_err(
                        |source| ConfigError::Read {
                            path: file.display().to_string(),
                            source,
                        },
                    )?
                }
                _ => read_discovered(file)?,
            };
            let read = read_file(&text, &file.display().to_string(), file, project_dir)?;
            reads.push((file.clone(), read));
        }
        for (file, read) in reads {
            let file = &file;
            for mut entry in read.entries {
                // An entry its host runs but mcp-lock cannot start or reach as it does:
                // said at every run, not only listed by `servers`.
                if let Err(why) = &entry.read
                    && let Some(why) = why.strip_prefix(entry::NOT_CHECKED)
                {
                    modifiers.warnings.push(format!(
                        "{}: server {:?} is not checked: {why}",
                        file.display(),
                        entry.name
                    ));
                }
                // Settings files outside the entry may turn it off (settings.rs).
                let mut note = None;
                if let Ok(spec) = &entry.read {
                    match modifiers.judge(read.host, entry.scope, &spec.name, spec.personal)? {
                        Some(settings::Verdict::Skip(why)) => entry.read = Err(why),
                        Some(settings::Verdict::Note(why)) => note = Some(why),
                        None => {}
                    }
                }
                found.push(Found {
                    name: entry.name.clone(),
                    file: file.clone(),
                    line: entry.line,
                    host: read.host,
                    skipped: entry.read.as_ref().err().cloned(),
                    note,
                });
                let here = found.len() - 1;
                let Ok(spec) = entry.read else { continue };
                let Some(&at) = index.get(&spec.name) else {
                    index.insert(spec.name.clone(), servers.len());
                    servers.push((spec, file.clone(), entry.scope, here));
                    continue;
                };
                let (existing, first, scope, taken) = &mut servers[at];
                // Claude Code's own scopes: local > project > user.
                if let (Some(old), Some(new)) = (*scope, entry.scope)
                    && old != new
                {
                    let (winner, loser, shadowed) = if new > old {
                        *existing = spec;
                        *first = file.clone();
                        *scope = Some(new);
                        (new, old, std::mem::replace(taken, here))
                    } else {
                        (old, new, here)
                    };
                    found[shadowed].skipped = Some(format!(
                        "{} scope, overridden by the {} scope",
                        loser.as_str(),
                        winner.as_str()
                    ));
                    continue;
                }
                // Each file's text read by its own host's variable rules; an envFile,
                // VS Code's PATH appending, a headersHelper or OAuth turned off is
                // part of what the entry launches: one that differs is another
                // definition, never merged.
                let env_file = |s: &ServerSpec| {
                    s.environ
                        .as_ref()
                        .map(|e| (e.env_file.clone(), e.path_appends))
                };
                if !existing.launches_as(&spec)
                    || env_file(existing).unwrap_or_default() != env_file(&spec).unwrap_or_default()
                    || existing.headers_helper != spec.headers_helper
                    || existing.oauth_off != spec.oauth_off
                    || existing.refusal != spec.refusal
                    || unset_names(existing) != unset_names(&spec)
                {
                    let preferred = prefer.get(&spec.name).map(|p| project_dir.join(p));
                    let same = |a: &Path, b: &Path| {
                        std::fs::canonicalize(a).ok() == std::fs::canonicalize(b).ok()
                    };
                    match preferred {
                        Some(p) if same(&p, file) => {
                            found[*taken].skipped = Some(format!(
                                "defined differently in {}; mcp-lock.toml prefers this one",
                                file.display()
                            ));
                            *existing = spec;
                            *first = file.clone();
                            *taken = here;
                        }
                        Some(p) if same(&p, first) => {
                            found[here].skipped = Some(format!(
                                "defined differently in {}; mcp-lock.toml prefers that one",
                                first.display()
                            ));
                        }
                        _ => {
                            return Err(ConfigError::Conflict {
                                name: spec.name,
                                first: first.display().to_string(),
                                second: file.display().to_string(),
                            });
                        }
                    }
                    continue;
                }
                // A variable one host leaves out when unset and the other requires is
                // required (an error names it), never silently left out for both; one
                // a host refuses empty is refused empty.
                let optional = &spec.vars.optional;
                existing.vars.optional.retain(|f| optional.contains(f));
                for field in &spec.vars.non_empty {
                    if !existing.vars.non_empty.contains(field) {
                        existing.vars.non_empty.push(field.clone());
                    }
                }
                // What each host lets the server inherit is the host's: kept per host,
                // so each client profile's listing is made as that host starts it.
                let inherit = |s: &ServerSpec| s.environ.as_ref().and_then(|e| e.inherit.clone());
                if inherit(existing) != inherit(&spec) {
                    let environ = existing.environ.get_or_insert_default();
                    for host in &spec.hosts {
                        if !existing.hosts.contains(host) {
                            environ.by_host.push((*host, inherit(&spec)));
                        }
                    }
                }
                for host in spec.hosts {
                    if !existing.hosts.contains(&host) {
                        existing.hosts.push(host);
                    }
                }
                existing.filter = existing.filter.union(&spec.filter);
                existing.personal &= spec.personal;
                existing.guarded &= spec.guarded;
                existing.allow_scripts &= spec.allow_scripts;
            }
        }
        let mut servers: Vec<ServerSpec> = servers.into_iter().map(|(s, ..)| s).collect();
        servers.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(ProjectConfig {
            project_dir: project_dir.to_path_buf(),
            files,
            servers,
            found,
            warnings: modifiers.warnings,
        })
    }

    /// The server of this name (`servers` is sorted by name).
    pub fn server(&self, name: &str) -> Option<&ServerSpec> {
        self.servers
            .binary_search_by(|s| s.name.as_str().cmp(name))
            .ok()
            .map(|at| &self.servers[at])
    }

    /// The named servers, or all of them when `names` is empty.
    pub fn select(&self, names: &[String]) -> Result<Vec<ServerSpec>, ConfigError> {
        if names.is_empty() {
            return Ok(self.servers.clone());
        }
        let mut picked = Vec::new();
        for name in names {
            match self.server(name) {
                Some(spec) if !picked.contains(spec) => picked.push(spec.clone()),
                Some(_) => {}
                None => {
                    return Err(ConfigError::UnknownServer {
                        name: name.clone(),
                        known: self.known_names(),
                    });
                }
            }
        }
        picked.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(picked)
    }

    fn known_names(&self) -> String {
        if self.servers.is_empty() {
            return "(no servers)".into();
        }
        self.servers
            .iter()
            .map(|s| s.name.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    }
}
