//! The bridge's stdout: one writer task, so lines never interleave, behind a byte
//! budget. A task with a line to write waits while the budget is spent, and so stops
//! reading its socket: when the guard stops taking from the bridge (its agent is not
//! reading), the server's stream stops too instead of piling up here.

use std::sync::Arc;

use tokio::io::AsyncWriteExt;
use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc};
use tokio::task::JoinHandle;

/// Bytes of lines queued for stdout at most; a larger line waits for the whole
/// budget and goes alone.
pub const BUDGET: usize = 1024 * 1024;

/// Where lines for stdout go.
#[derive(Clone)]
pub struct Out {
    lines: mpsc::UnboundedSender<(Vec<u8>, OwnedSemaphorePermit)>,
    budget: Arc<Semaphore>,
}

impl Out {
    /// The queue and the task writing it to stdout, which ends when every `Out` is
    /// dropped or stdout closes.
    pub fn start() -> (Out, JoinHandle<()>) {
        let (tx, mut rx) = mpsc::unbounded_channel::<(Vec<u8>, OwnedSemaphorePermit)>();
        let writer = tokio::spawn(async move {
            let mut stdout = tokio::io::stdout();
            while let Some((line, permit)) = rx.recv().await {
                // The line end is written apart: pushing it could copy a large line.
                let written = async {
                    stdout.write_all(&line).await?;
                    stdout.write_all(b"\n").await?;
                    stdout.flush().await
                };
                if written.await.is_err() {
                    break;
                }
                drop(permit);
            }
        });
        let out = Out {
            lines: tx,
            budget: Arc::new(Semaphore::new(BUDGET)),
        };
        (out, writer)
    }

    /// Queues one line (without its line end), waiting while the budget is spent.
    pub async fn line(&self, line: Vec<u8>) {
        let cost = line.len().clamp(1, BUDGET) as u32;
        let Ok(permit) = self.budget.clone().acquire_many_owned(cost).await else {
            return;
        };
        let _ = self.lines.send((line, permit));
    }
}
