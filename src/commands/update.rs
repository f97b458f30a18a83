//! `mcp-lock update`: list every server, show each difference from the lock, and move
//! only the pins a person approved.

use std::io::IsTerminal;

use anstyle::AnsiColor;
use anyhow::Context;
use dialoguer::console::{Key, Term};
use mcp_lock::base::text::{count, escape_cut, escape_for_terminal as esc};
use mcp_lock::live::check::{
    ProfileUse, Targets, check_servers, package_entries, plan_targets, resolve_all,
    select_with_lock,
};
use mcp_lock::records::lock::{Approval, FileLock, Lockfile, Pins, read_lock, write_lock_file};
use mcp_lock::review::report::{
    Review, SHOWN_LINE_CHARS, render_proposal, render_review, server_label, short,
};
use mcp_lock::review::update::{
    Proposal, add_package_proposals, apply, plan, record_approvals, screened_out, withhold,
};
use mcp_lock::verdict::drift::ChangeKind;
use mcp_lock::verdict::exit_codes::ExitCode;
use mcp_lock::verdict::policy::{Policy, Rule};

use super::{Workspace, check_options, env_lookup, progress, status, warning};
use crate::cli::UpdateArgs;

mod observed;
mod pull_request;
use observed::*;
use pull_request::*;

pub async fn run(ws: &Workspace, args: UpdateArgs) -> anyhow::Result<ExitCode> {
    let project = ws.load_config()?;
    let display = ws.lock_display();
    let root = ws.belongs_in(&ws.lock_path);
    // Held from reading the lock to writing it, so a concurrent update never loses ours.
    if ws.personal
        && !args.dry_run
        && let Some(dir) = ws.lock_path.parent()
    {
        mcp_lock::base::files::create_dir_within(dir, &root, 0o755)
            .with_context(|| format!("cannot create {}", dir.display()))?;
    }
    let _file_lock = if args.dry_run {
        None
    } else {
        // A lock symlinked out of the project, or dangling, is refused before any
        // server is started.
        mcp_lock::base::files::landing(&ws.lock_path, &root)
            .with_context(|| format!("cannot write {display}"))?;
        let path = ws.lock_path.clone();
        let shown = display.clone();
        let root = root.clone();
        let lock = tokio::task::spawn_blocking(move || {
            FileLock::acquire(&path, &root, || {
                status(
                    "Blocking",
                    AnsiColor::Cyan,
                    &format!(
                        "waiting for file lock on {shown} (another mcp-lock update is running)"
                    ),
                )
            })
        })
        .await?
        .with_context(|| format!("cannot lock the directory of {display}"))?;
        Some(lock)
    };
    let mut policy = ws.policy(None)?;
    policy.accept.extend(args.accept.iter().copied());
    let existing = read_lock(&ws.lock_path)?;
    let mut lock = existing.clone().unwrap_or_default();
    // The pinned closures' packages, so a move shows which of them changed. A
    // companion that does not read is no reason to stop: update writes it again.
    if let Err(why) = mcp_lock::records::lock::closures::attach(&mut lock, &ws.lock_path) {
        warning(&format!(
            "{}; closure changes are not shown",
            escape_cut(&why, SHOWN_LINE_CHARS)
        ));
    }
    let lock = lock;
    // A pinned server the config no longer has, named or not, is proposed for removal.
    let (selected, dropped) = select_with_lock(&project, &lock, &args.servers)?;
    let resolved = resolve_all(&project, &selected, &env_lookup)?;
    let using = Workspace::profile_use(&args.connect.client, ProfileUse::Selected);
    let Targets {
        mut targets,
        notices,
    } = plan_targets(resolved, &lock, &policy, using)?;
    for line in &notices {
        super::notice(line);
    }
    offer_observed(ws, &lock, &mut targets);
    let mut options = check_options(&args.connect, false, ws, &policy)?;
    options.protocol = args.protocol.clone();
    options.contact_new_origins = args.approve_origin;
    super::announce(&selected);
    let entries = package_entries(&targets, &options);
    let (mut checked, resolved_packages) = tokio::join!(
        check_servers(targets, Pins::Whole(&lock), &options, progress()),
        mcp_lock::servers::package::resolve_all(entries)
    );
    let mut packages = std::collections::BTreeMap::new();
    for (server, (pin, closure_problem)) in resolved_packages {
        if let Some(mut why) = closure_problem {
            if let Some(c) = checked.iter().find(|c| c.spec.name == server) {
                c.secrets.redact_in_place(&mut why);
            }
            warning(&format!(
                "{}: dependency closure not pinned: {}",
                esc(&server),
                escape_cut(&why, SHOWN_LINE_CHARS)
            ));
        }
        packages.insert(server, pin);
    }
    policy.screen.context =
        std::sync::Arc::new(mcp_lock::verdict::screen::Context::of_run(&lock, &checked));
    for c in &mut checked {
        mcp_lock::live::check::mark_denied(
            &mut c.report,
            &policy.rules,
            &c.fetched,
            lock.servers.get(&c.spec.name),
        );
        policy.evaluate(&mut c.report);
    }
    // A kind declared but not listed is pinned as none: said, so the empty pin is no
    // surprise. A denied definition is pinned, so its drift is seen: said, so no one
    // takes the pin for leave to use it.
    for c in &checked {
        for d in &c.report.denied {
            super::notice(&format!(
                "{}: {} {} is pinned but denied to {}: {}",
                server_label(&c.spec.name, &c.profile.name),
                d.kind.noun(),
                d.name,
                c.profile.name,
                d.denial
            ));
        }
        for kind in &c.report.not_implemented {
            super::notice(&format!(
                "{}: {}",
                server_label(&c.spec.name, &c.profile.name),
                mcp_lock::verdict::drift::not_implemented_note(*kind)
            ));
        }
    }
    // Why a package did not resolve goes in the lock: never with a secret in it.
    for (server, pin) in &mut packages {
        if let mcp_lock::servers::package::Package::Unresolved { reason } = &mut pin.package
            && let Some(c) = checked.iter().find(|c| &c.spec.name == server)
        {
            c.secrets.redact_in_place(reason);
        }
    }
    let mut plan = plan(&checked, &lock, &dropped, args.connect.client.is_none());
    add_package_proposals(&mut plan, &lock, &packages);
    let (proposals, held) = (&plan.proposals, &plan.held);
    for h in held {
        if h.secret {
            super::error(&format!(
                "{}: {}; its pins are unchanged",
                server_label(&h.server, &h.profile),
                esc(&h.reason)
            ));
            continue;
        }
        warning(&format!(
            "{}: {}: {}; its pins are unchanged",
            server_label(&h.server, &h.profile),
            h.verdict.as_str(),
            escape_cut(&h.reason, SHOWN_LINE_CHARS)
        ));
        if let Some(c) = checked
            .iter()
            .find(|c| c.spec.name == h.server && c.profile.name == h.profile)
        {
            for line in c.report.stderr.iter().rev().take(5).rev() {
                super::err_out(&format!("    | {}\n", esc(line)));
            }
        }
    }
    for (server, change) in &plan.unpinnable {
        warning(&format!(
            "{}/{}: cannot be pinned: {}",
            esc(server),
            esc(&change.tool),
            esc(change.problem.as_deref().unwrap_or(""))
        ));
    }
    for (server, why) in &plan.package_errors {
        let mut why = why.clone();
        if let Some(c) = checked.iter().find(|c| &c.spec.name == server) {
            c.secrets.redact_in_place(&mut why);
        }
        super::error(&format!(
            "{}: package: {}; its package pin is unchanged",
            esc(server),
            escape_cut(&why, SHOWN_LINE_CHARS)
        ));
    }
    let done_code = if held.iter().any(|h| h.secret) {
        ExitCode::Usage
    } else if held.is_empty() && plan.package_errors.is_empty() {
        ExitCode::Success
    } else {
        ExitCode::Unverified
    };

    let review = args.pull_request.as_deref();
    let yes = args.yes || review.is_some();
    if proposals.is_empty() {
        if let Some(dir) = review {
            write_review(dir, None, &ws.lock_path)?;
        }
        // A project with nothing to pin gets its (empty) lock; one whose servers were
        // all held gets none.
        if existing.is_none() && !args.dry_run && held.is_empty() {
            write(ws, &root, &lock)?;
        }
        if held.is_empty() && plan.package_errors.is_empty() {
            status(
                "Fresh",
                AnsiColor::Green,
                &format!("{display} is up to date"),
            );
        } else {
            let n = held.len() + plan.package_errors.len();
            let noun = if n == 1 { "server" } else { "servers" };
            status(
                "Unchanged",
                AnsiColor::Yellow,
                &format!("{display} ({n} {noun} could not be checked)"),
            );
        }
        return Ok(done_code);
    }
    let by_policy = by_policy(proposals, &policy);
    let decisions = match decide(proposals, &by_policy, args.dry_run, yes).await? {
        Decided::DryRun => return Ok(done_code),
        Decided::Each(decisions) => decisions,
        Decided::NoTerminal => {
            let accepted: Vec<Proposal> = proposals
                .iter()
                .zip(&by_policy)
                .filter(|(_, auto)| **auto)
                .map(|(p, _)| p.clone())
                .collect();
            if !accepted.is_empty() {
                let mut next = apply(&lock, &checked, &accepted);
                let how = approvals(proposals, &by_policy, &by_policy, false, false);
                record_approvals(&lock, &mut next, &how);
                write(ws, &root, &next)?;
                for p in &accepted {
                    report_line(p, true);
                }
            }
            approval_needed("update", &by_policy, accepted.len());
            return Ok(ExitCode::ApprovalNeeded);
        }
    };

    // Unattended (--yes), nothing screening fails is pinned: such a definition is left
    // unpinned (or at its old pin) for a person to look at. (What the policy accepts
    // unasked never includes one: `Policy::accepts`.)
    let mut decisions = decisions;
    let withheld = if yes {
        screened_out(proposals, &mut decisions)
    } else {
        Vec::new()
    };
    let accepted: Vec<Proposal> = proposals
        .iter()
        .zip(&decisions)
        .filter(|(_, yes)| **yes)
        .map(|(p, _)| p.clone())
        .collect();
    // Nothing accepted (a first pin rejected, say) leaves the lock as it was: an
    // empty lock is not written in its place.
    let mut written = None;
    if !accepted.is_empty() {
        let mut next = apply(&lock, &checked, &accepted);
        withhold(&mut next, &withheld);
        let mut how = approvals(proposals, &decisions, &by_policy, yes, false);
        if review.is_some() {
            // Merging the pull request approves every change in it, the policy's too.
            for (_, approval) in &mut how {
                *approval = Approval::PullRequest;
            }
        }
        record_approvals(&lock, &mut next, &how);
        write(ws, &root, &next)?;
        written = Some(next);
    }
    if let Some(dir) = review {
        let left_out = left_out_lines(held, &withheld);
        let body = written.as_ref().and_then(|next| {
            let mut reports = mcp_lock::verdict::drift::compare_locks(&lock, next);
            for report in &mut reports {
                policy.evaluate(report);
            }
            render_review(&reports, &left_out, &display).or(Some(Review::rewritten(&display)))
        });
        write_review(dir, body.as_ref(), &ws.lock_path)?;
    }
    for (p, yes) in proposals.iter().zip(&decisions) {
        // A change held back for its screening is named below, once.
        let held_back = |w: &mcp_lock::review::update::Withheld| match p {
            Proposal::Tool { change, .. } => {
                !w.from_listing && w.server == p.server() && w.key == change.tool
            }
            _ => false,
        };
        if !*yes && withheld.iter().any(held_back) {
            continue;
        }
        report_line(p, *yes);
    }
    for w in &withheld {
        let noun = match w.kind {
            mcp_lock::contract::surface::Kind::Tool => String::new(),
            kind => format!("{} ", kind.noun()),
        };
        super::error(&format!(
            "{}/{noun}{} [{}] not pinned: screening found {}; review it with `mcp-lock update {}` in a terminal, or accept the findings in [screen] accept",
            esc(&w.server),
            esc(&w.key),
            esc(&w.profile),
            esc(&w.findings),
            esc(&w.server)
        ));
    }
    if !withheld.is_empty() {
        return Ok(ExitCode::ApprovalNeeded);
    }
    Ok(done_code)
}

/// How the proposals of a run were decided.
pub(super) enum Decided {
    /// `--dry-run`: every proposal shown, nothing to write.
    DryRun,
    /// One decision per proposal, in order.
    Each(Vec<bool>),
    /// Some need a person, and there is no terminal to ask on (and no `--yes`): those
    /// were shown; only what the policy accepts may be written
    /// ([`approval_needed`] says so).
    NoTerminal,
}

/// Whether the policy accepts each proposal without asking. Tool changes whose class
/// the policy accepts need no question, unless their server's identity or
/// instructions changed too: then a person looks at all of it.
pub(super) fn by_policy(proposals: &[Proposal], policy: &Policy) -> Vec<bool> {
    let doubtful: Vec<&str> = proposals
        .iter()
        .filter_map(|p| match p {
            Proposal::Metadata {
                server, changes, ..
            } if changes.iter().any(|c| c.drift) => Some(server.as_str()),
            _ => None,
        })
        .collect();
    proposals
        .iter()
        .map(|p| match p {
            Proposal::Tool { server, change, .. } => {
                policy.accepts(change) && !doubtful.contains(&server.as_str())
            }
            // A new profile's listing whose every new definition the policy accepts.
            Proposal::PinProfile {
                server, changes, ..
            } => changes.iter().all(|c| policy.accepts(c)) && !doubtful.contains(&server.as_str()),
            // A package moves only with a person's approval, or when the policy names
            // `package-changed` in `accept`.
            Proposal::Package { .. } => policy.accept.contains(&Rule::PackageChanged),
            _ => false,
        })
        .collect()
}

/// How each accepted proposal was approved, with its server: what the policy accepts
/// is `policy` (even under `--yes`: it needed no one), the rest `yes` under `--yes`,
/// else `terminal` (only a person at the prompt accepts anything else). `upgrade`
/// records the `upgrade-` forms.
pub(super) fn approvals(
    proposals: &[Proposal],
    decisions: &[bool],
    by_policy: &[bool],
    yes: bool,
    upgrade: bool,
) -> Vec<(String, Approval)> {
    proposals
        .iter()
        .zip(decisions)
        .zip(by_policy)
        .filter(|((_, accepted), _)| **accepted)
        .map(|((p, _), auto)| {
            let how = match (*auto, yes, upgrade) {
                (true, _, false) => Approval::Policy,
                (false, true, false) => Approval::Yes,
                (false, false, false) => Approval::Terminal,
                (true, _, true) => Approval::UpgradePolicy,
                (false, true, true) => Approval::UpgradeYes,
                (false, false, true) => Approval::UpgradeTerminal,
            };
            (p.server().to_string(), how)
        })
        .collect()
}

/// Decides every proposal, as `update` and `upgrade` both do: `--dry-run` shows them
/// all, `--yes` accepts them all, the policy's own are accepted unasked, and a person
/// at a terminal is asked about each of the rest.
pub(super) async fn decide(
    proposals: &[Proposal],
    by_policy: &[bool],
    dry_run: bool,
    yes: bool,
) -> anyhow::Result<Decided> {
    let interactive = std::io::stdin().is_terminal() && std::io::stderr().is_terminal();
    let pending = by_policy.iter().filter(|auto| !**auto).count();
    if dry_run {
        show_all(proposals, by_policy);
        let accepted = proposals.len() - pending;
        let by = if accepted > 0 {
            format!(", {accepted} the policy accepts")
        } else {
            String::new()
        };
        status(
            "Dry run",
            AnsiColor::Cyan,
            &format!(
                "{} would need approval{by}; nothing written",
                count(pending, "change")
            ),
        );
        return Ok(Decided::DryRun);
    }
    if yes {
        return Ok(Decided::Each(vec![true; proposals.len()]));
    }
    if pending == 0 {
        return Ok(Decided::Each(by_policy.to_vec()));
    }
    if interactive {
        let all = proposals.to_vec();
        let auto = by_policy.to_vec();
        return Ok(Decided::Each(
            tokio::task::spawn_blocking(move || ask(&all, &auto)).await??,
        ));
    }
    let waiting: Vec<Proposal> = proposals
        .iter()
        .zip(by_policy)
        .filter(|(_, auto)| !**auto)
        .map(|(p, _)| p.clone())
        .collect();
    show_all(&waiting, &vec![false; waiting.len()]);
    Ok(Decided::NoTerminal)
}

/// The error after [`Decided::NoTerminal`]: how many changes wait, how to approve
/// them, and whether the `written` changes the policy accepts were written.
pub(super) fn approval_needed(command: &str, by_policy: &[bool], written: usize) {
    let pending = by_policy.iter().filter(|auto| !**auto).count();
    let written = if written > 0 {
        let (what, were) = if written == 1 {
            ("change", "was")
        } else {
            ("changes", "were")
        };
        format!("the {written} {what} the policy accepts {were} written")
    } else {
        "nothing was written".to_string()
    };
    super::error(&format!(
        "{} {} approval and there is no terminal to ask on; run `mcp-lock {command}` in a terminal, or pass --yes to accept {}. {}",
        count(pending, "change"),
        if pending == 1 { "needs" } else { "need" },
        if pending == 1 { "it" } else { "them all" },
        capitalize(&written)
    ));
}

/// Writes the lock unless its bytes are already there. (A server that sent one of its
/// secrets was held by the plan, so none reaches the lock.)
fn write(ws: &Workspace, root: &std::path::Path, lock: &Lockfile) -> anyhow::Result<()> {
    let display = ws.lock_display();
    write_lock_file(&ws.lock_path, root, lock)
        .map(|_| ())
        .with_context(|| format!("cannot write {display}"))
}

fn capitalize(text: &str) -> String {
    let mut chars = text.chars();
    chars
        .next()
        .map(|c| c.to_uppercase().chain(chars).collect())
        .unwrap_or_default()
}

/// Every proposal, each marked if the policy accepts it.
fn show_all(proposals: &[Proposal], by_policy: &[bool]) {
    for (i, (p, auto)) in proposals.iter().zip(by_policy).enumerate() {
        let gap = if i == 0 { "" } else { "\n" };
        let mark = if *auto {
            "    (the policy accepts this change)\n"
        } else {
            ""
        };
        super::err_out(&format!("{gap}{}{mark}", render_proposal(p)));
    }
}

/// Asks about each proposal the policy does not accept, in turn: y accepts, n rejects,
/// a accepts the rest, q (or end of input, Ctrl-D) rejects the rest. One decision per
/// proposal.
fn ask(proposals: &[Proposal], by_policy: &[bool]) -> anyhow::Result<Vec<bool>> {
    let term = Term::stderr();
    let mut decisions = by_policy.to_vec();
    let total = by_policy.iter().filter(|auto| !**auto).count();
    let asked = proposals.iter().enumerate().filter(|(i, _)| !by_policy[*i]);
    for (n, (i, p)) in asked.enumerate() {
        super::err_out(&format!("\n{}", render_proposal(p)));
        let question = match p {
            Proposal::PinServer { .. } => "Pin these tools?",
            Proposal::PinProfile { .. } => "Pin this profile's listing?",
            Proposal::PinKind { .. } => "Pin these?",
            Proposal::DropServer { .. } | Proposal::DropProfile { .. } => "Drop these pins?",
            Proposal::Package { .. } => "Pin this package?",
            _ => "Accept this change?",
        };
        let prompt = format!("[{}/{total}] {question} [y]es, [n]o, [a]ll, [q]uit", n + 1);
        match read_answer(&term, &prompt).map_err(|e| match e.kind() {
            std::io::ErrorKind::Interrupted => anyhow::Error::new(super::Interrupted),
            _ => anyhow::anyhow!("cannot read the answer from the terminal: {e}"),
        })? {
            Answer::Yes => decisions[i] = true,
            Answer::No => {}
            Answer::All => {
                decisions[i..].fill(true);
                break;
            }
            Answer::Quit => break,
        }
    }
    Ok(decisions)
}

/// What a person answered at the prompt.
enum Answer {
    Yes,
    No,
    All,
    Quit,
}

/// Asks until the answer is one of y, n, a or q (or yes, no, all, quit). End of input
/// is q: there is nothing more to read, so the rest is rejected, not waited for.
fn read_answer(term: &Term, prompt: &str) -> std::io::Result<Answer> {
    loop {
        let Some(line) = read_line(term, &format!("{prompt}: "))? else {
            return Ok(Answer::Quit);
        };
        match line.trim().to_ascii_lowercase().as_str() {
            "y" | "yes" => return Ok(Answer::Yes),
            "n" | "no" => return Ok(Answer::No),
            "a" | "all" => return Ok(Answer::All),
            "q" | "quit" => return Ok(Answer::Quit),
            _ => term.write_line("error: answer y, n, a or q")?,
        }
    }
}

/// One line typed after `prompt`, or `None` at end of input: Ctrl-D on an empty line,
/// as a shell takes it. Ctrl-C raises SIGINT, as it does outside a prompt, and is
/// returned as an `Interrupted` error.
fn read_line(term: &Term, prompt: &str) -> std::io::Result<Option<String>> {
    term.write_str(prompt)?;
    term.flush()?;
    let mut line = String::new();
    loop {
        match term.read_key()? {
            Key::Enter => {
                term.write_line("")?;
                return Ok(Some(line));
            }
            Key::Char('\u{4}') if line.is_empty() => {
                term.write_line("")?;
                return Ok(None);
            }
            Key::Backspace => {
                if let Some(c) = line.pop() {
                    term.clear_chars(dialoguer::console::measure_text_width(&c.to_string()))?;
                    term.flush()?;
                }
            }
            Key::Char(c) if !c.is_control() => {
                line.push(c);
                term.write_str(c.encode_utf8(&mut [0; 4]))?;
                term.flush()?;
            }
            _ => {}
        }
    }
}

/// One cargo-style line per proposal, after the lock is written.
pub(super) fn report_line(p: &Proposal, accepted: bool) {
    let server = esc(p.server());
    let label = server_label(p.server(), p.profile().unwrap_or_default());
    if !accepted {
        let what = match p {
            Proposal::Tool {
                change, profile, ..
            } => {
                let noun = match change.kind {
                    mcp_lock::contract::surface::Kind::Tool => String::new(),
                    kind => format!("{} ", kind.noun()),
                };
                format!("{server}/{noun}{} [{}]", esc(&change.tool), esc(profile))
            }
            Proposal::PinServer { .. } | Proposal::PinProfile { .. } => {
                format!("{label} (not pinned)")
            }
            Proposal::PinKind { kind, .. } => format!("{label} {} (not pinned)", kind.plural()),
            Proposal::Metadata { .. } => format!("{label} server metadata"),
            Proposal::DropServer { .. } | Proposal::DropProfile { .. } => {
                format!("{label} (pins kept)")
            }
            Proposal::Package { old, .. } => match old {
                Some(old) => format!("{server} package (kept {})", esc(&old.to_string())),
                None => format!("{server} package (not pinned)"),
            },
        };
        status("Rejected", AnsiColor::Yellow, &what);
        return;
    }
    match p {
        Proposal::PinServer { tools, package, .. } => {
            status(
                "Pinning",
                AnsiColor::Green,
                &format!("{label} ({})", mcp_lock::review::report::kinds_text(tools)),
            );
            if let Some(package) = package {
                status(
                    "Pinning",
                    AnsiColor::Green,
                    &format!("{server} package {}", esc(&package.to_string())),
                );
            }
        }
        Proposal::PinKind { kind, items, .. } => status(
            "Pinning",
            AnsiColor::Green,
            &format!("{label} ({})", count(items.len(), kind.noun())),
        ),
        Proposal::PinProfile { listed, .. } => status(
            "Pinning",
            AnsiColor::Green,
            &format!(
                "{label} ({})",
                mcp_lock::review::report::counts_text(listed)
            ),
        ),
        Proposal::Tool {
            change, profile, ..
        } => {
            let noun = match change.kind {
                mcp_lock::contract::surface::Kind::Tool => String::new(),
                kind => format!("{} ", kind.noun()),
            };
            let tool = format!("{server}/{noun}{} [{}]", esc(&change.tool), esc(profile));
            let pinned = short(change.pinned_hash.as_deref().unwrap_or(""));
            let live = short(change.live_hash.as_deref().unwrap_or(""));
            match change.change {
                ChangeKind::Added => status("Adding", AnsiColor::Green, &format!("{tool} {live}")),
                ChangeKind::Removed => {
                    status("Removing", AnsiColor::Green, &format!("{tool} {pinned}"))
                }
                ChangeKind::Changed => status(
                    "Updating",
                    AnsiColor::Green,
                    &format!("{tool} {pinned} -> {live}"),
                ),
                ChangeKind::Renamed => status(
                    "Renaming",
                    AnsiColor::Green,
                    &format!(
                        "{tool} (was {}) {pinned} -> {live}",
                        esc(change.renamed_from.as_deref().unwrap_or(""))
                    ),
                ),
            }
        }
        Proposal::Metadata { .. } => status(
            "Updating",
            AnsiColor::Green,
            &format!("{label} server metadata"),
        ),
        Proposal::DropProfile { .. } => status(
            "Removing",
            AnsiColor::Green,
            &format!("{label} (client profile no longer selected)"),
        ),
        Proposal::DropServer { tools, .. } => status(
            "Removing",
            AnsiColor::Green,
            &format!("{server} ({})", count(*tools, "pin")),
        ),
        Proposal::Package { old, new, .. } => match old {
            Some(old) => status(
                "Updating",
                AnsiColor::Green,
                &format!(
                    "{server} package {} -> {}",
                    esc(&old.to_string()),
                    esc(&new.to_string())
                ),
            ),
            None => status(
                "Pinning",
                AnsiColor::Green,
                &format!("{server} package {}", esc(&new.to_string())),
            ),
        },
    }
}
