//! What the user sees while servers are contacted.
//!
//! On a terminal each running server gets a spinner with its name and state
//! ("initializing", "listing page 2"), replaced by a line when it finishes. In a pipe or
//! CI log only the finished lines appear, plain, one per server.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use anstyle::{AnsiColor, Style};
use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use mcp_lock::base::text::escape_for_terminal as esc;
use mcp_lock::live::check::ProgressSink;
use mcp_lock::review::report::verdict_style_for;
use mcp_lock::verdict::drift::{ServerReport, Verdict};

use super::err_out;

/// The spinners on screen, if any, so an interrupt can take them away.
static SHOWN: Mutex<Option<MultiProgress>> = Mutex::new(None);

/// Clears the spinners and draws no more.
pub fn hide() {
    let shown = SHOWN.lock().unwrap_or_else(|e| e.into_inner()).take();
    if let Some(multi) = shown {
        let _ = multi.clear();
        multi.set_draw_target(ProgressDrawTarget::hidden());
    }
}

/// Whether colour is off for stderr (--color never, NO_COLOR, or not a terminal).
fn colorless() -> bool {
    anstream::AutoStream::choice(&std::io::stderr()) == anstream::ColorChoice::Never
}

pub struct Display {
    /// `None` when stderr is not a terminal.
    multi: Option<MultiProgress>,
    bars: Mutex<HashMap<String, ProgressBar>>,
}

impl Display {
    pub fn new(terminal: bool) -> Self {
        let multi = terminal.then(|| MultiProgress::with_draw_target(ProgressDrawTarget::stderr()));
        *SHOWN.lock().unwrap_or_else(|e| e.into_inner()) = multi.clone();
        Display {
            multi,
            bars: Mutex::new(HashMap::new()),
        }
    }

    fn finished_line(report: &ServerReport) -> String {
        let style = match report.verdict {
            // The listing itself went well; the drift is the report's to show. Red here
            // reads as an error, so a warning's yellow, as cargo's.
            Verdict::Stale => Style::new().fg_color(Some(AnsiColor::Yellow.into())).bold(),
            verdict => verdict_style_for(verdict),
        };
        let what = report
            .listed_text()
            .unwrap_or_else(|| report.verdict.as_str().to_string());
        let verb = if report.verdict == Verdict::Unverifiable {
            "Failed"
        } else {
            "Listed"
        };
        let line = format!(
            "{style}{verb:>12}{style:#} {} ({what}, {:.2}s)",
            mcp_lock::review::report::server_label(&report.name, &report.profile),
            report.elapsed_ms as f64 / 1000.0
        );
        // indicatif writes past anstream, so honour --color / NO_COLOR here.
        if colorless() {
            anstream::adapter::strip_str(&line).to_string()
        } else {
            line
        }
    }
}

impl ProgressSink for Display {
    fn state(&self, server: &str, state: &str) {
        let Some(multi) = &self.multi else {
            // Plain output: only finished lines.
            return;
        };
        let mut bars = self.bars.lock().unwrap_or_else(|e| e.into_inner());
        let bar = bars.entry(server.to_string()).or_insert_with(|| {
            let bar = multi.add(ProgressBar::new_spinner());
            // indicatif styles by its own rules, deaf to --color and NO_COLOR.
            let template = if colorless() {
                "{spinner} {prefix} {wide_msg}"
            } else {
                "{spinner:.cyan} {prefix:.bold} {wide_msg:.dim}"
            };
            bar.set_style(ProgressStyle::with_template(template).expect("a valid template"));
            bar.set_prefix(esc(server));
            bar.enable_steady_tick(Duration::from_millis(100));
            bar
        });
        bar.set_message(esc(state));
    }

    fn finished(&self, report: &ServerReport) {
        let line = Display::finished_line(report);
        match &self.multi {
            Some(multi) => {
                let bar = self
                    .bars
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .remove(&format!("{} [{}]", report.name, report.profile));
                if let Some(bar) = bar {
                    bar.finish_and_clear();
                    multi.remove(&bar);
                }
                let _ = multi.println(line);
            }
            None => err_out(&format!("{line}\n")),
        }
    }
}
