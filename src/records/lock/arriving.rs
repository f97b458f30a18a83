//! A lock whose definitions are still being read: its header (what planning and
//! launching the servers need) at once, the whole lock once a thread of its own has
//! parsed and hashed every definition. `verify` of a large lock lists the servers
//! meanwhile, instead of reading every definition before the first server starts.

use std::sync::{Arc, Mutex};

use tokio::sync::watch;

use super::Lockfile;
use super::read::{LockError, LockLines, UncheckedLock};

/// The lock a check reads.
#[derive(Clone, Copy)]
pub enum Pins<'a> {
    /// Read whole.
    Whole(&'a Lockfile),
    /// Its header now, the whole lock from `whole` once read.
    Arriving {
        header: &'a Lockfile,
        whole: &'a WholeLock,
    },
}

impl<'a> Pins<'a> {
    /// What launching the servers needs: the whole lock, or its header (every
    /// server's profiles and package, no definitions).
    pub fn header(&self) -> &'a Lockfile {
        match self {
            Pins::Whole(lock) => lock,
            Pins::Arriving { header, .. } => header,
        }
    }

    /// The definitions still being read, if they are.
    pub fn arriving(&self) -> Option<WholeLock> {
        match self {
            Pins::Whole(_) => None,
            Pins::Arriving { whole, .. } => Some((*whole).clone()),
        }
    }
}

/// The whole lock, being read on a thread of its own.
#[derive(Clone)]
pub struct WholeLock {
    state: watch::Receiver<Reading>,
    /// The reading's lines, or its error: taken once, by [`WholeLock::finish`].
    outcome: Arc<Mutex<Option<Result<LockLines, LockError>>>>,
    path: Arc<str>,
}

#[derive(Clone)]
enum Reading {
    Pending,
    Read(Arc<Lockfile>),
    Failed,
}

impl WholeLock {
    /// Starts reading the definitions of `unchecked` (whose header was read).
    pub fn read(unchecked: UncheckedLock) -> WholeLock {
        let path = Arc::from(unchecked.path());
        let (send, state) = watch::channel(Reading::Pending);
        let outcome = Arc::new(Mutex::new(None));
        let slot = outcome.clone();
        std::thread::spawn(move || {
            let (reading, result) = match unchecked.check() {
                Ok((lock, lines)) => (Reading::Read(Arc::new(lock)), Ok(lines)),
                Err(e) => (Reading::Failed, Err(e)),
            };
            *slot.lock().unwrap_or_else(|p| p.into_inner()) = Some(result);
            let _ = send.send(reading);
        });
        WholeLock {
            state,
            outcome,
            path,
        }
    }

    /// The whole lock once read; `None` when it does not read (its error is
    /// [`WholeLock::finish`]'s).
    pub async fn get(&self) -> Option<Arc<Lockfile>> {
        let mut state = self.state.clone();
        // The sender is dropped only after sending, or by a panic while reading.
        let reading = state
            .wait_for(|r| !matches!(r, Reading::Pending))
            .await
            .ok()?
            .clone();
        match reading {
            Reading::Read(lock) => Some(lock),
            Reading::Pending | Reading::Failed => None,
        }
    }

    /// The whole lock and where each server and definition is in the file, or the
    /// error the whole reading found.
    pub async fn finish(self) -> Result<(Arc<Lockfile>, LockLines), LockError> {
        let lock = self.get().await;
        let outcome = self
            .outcome
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        match (lock, outcome) {
            (Some(lock), Some(Ok(lines))) => Ok((lock, lines)),
            (_, Some(Err(e))) => Err(e),
            _ => Err(LockError::Invalid {
                path: self.path.to_string(),
                line: 1,
                message: "reading the lock's definitions stopped unexpectedly".into(),
            }),
        }
    }
}
