//! Reading the files a project holds (the lock, its companion, the policy, client
//! configs, the upgrade journal) so that what a cloned repository commits in their
//! place cannot hang or exhaust mcp-lock: only a regular file is read, opened without
//! blocking (a FIFO or a device is refused at once, never waited on), and never more
//! than a limit the caller names.

use std::fs::{File, OpenOptions};
use std::io::{self, Read as _};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::Path;

/// Why a project file was not read although it exists. The caller names the file.
#[derive(Debug, thiserror::Error)]
pub enum NotRead {
    #[error("it is {kind}, not a regular file: replace it with the file")]
    NotAFile { kind: &'static str },
    #[error("it is larger than {}: is this the right file?", shown_size(*limit))]
    TooLarge { limit: u64 },
}

/// The bytes of the regular file at `path` (symlinks followed), at most `limit` of
/// them. A missing file is `ErrorKind::NotFound` as from `std::fs::read`; anything
/// else than a regular file, or a larger one, is an `ErrorKind::InvalidData` error
/// carrying [`NotRead`].
pub fn read_regular(path: &Path, limit: u64) -> io::Result<Vec<u8>> {
    let (file, len) = open_regular(path)?;
    if len > limit {
        return Err(not_read(NotRead::TooLarge { limit }));
    }
    let mut bytes = Vec::with_capacity(len as usize);
    file.take(limit + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > limit {
        return Err(not_read(NotRead::TooLarge { limit }));
    }
    Ok(bytes)
}

/// The regular file at `path` (symlinks followed) opened for reading, with its
/// length then; errors as [`read_regular`]'s. For a caller that streams it.
pub fn open_regular(path: &Path) -> io::Result<(File, u64)> {
    // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer.
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC | libc::O_NOCTTY)
        .open(path)?;
    let meta = file.metadata()?;
    let kind = meta.file_type();
    if !kind.is_file() {
        let kind = if kind.is_dir() {
            "a directory"
        } else if kind.is_fifo() {
            "a FIFO"
        } else if kind.is_socket() {
            "a socket"
        } else if kind.is_char_device() || kind.is_block_device() {
            "a device"
        } else {
            "a special file"
        };
        return Err(not_read(NotRead::NotAFile { kind }));
    }
    Ok((file, meta.len()))
}

/// The error [`read_regular`] gives for a file larger than `limit`.
pub fn too_large_error(limit: u64) -> io::Error {
    not_read(NotRead::TooLarge { limit })
}

/// Whether `error` is [`read_regular`]'s refusal of a file too large.
pub fn too_large(error: &io::Error) -> bool {
    matches!(
        error.get_ref().and_then(|e| e.downcast_ref()),
        Some(NotRead::TooLarge { .. })
    )
}

/// [`read_regular`] as UTF-8 text (`ErrorKind::InvalidData` when it is not).
pub fn read_regular_text(path: &Path, limit: u64) -> io::Result<String> {
    String::from_utf8(read_regular(path, limit)?)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "it is not UTF-8 text"))
}

fn not_read(why: NotRead) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, why)
}

fn shown_size(bytes: u64) -> String {
    if bytes >= 1 << 20 {
        format!("{} MiB", bytes >> 20)
    } else {
        format!("{} KiB", bytes >> 10)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fifo_is_refused_without_waiting_for_a_writer() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("mcp.lock");
        let name = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
        assert_eq!(unsafe { libc::mkfifo(name.as_ptr(), 0o600) }, 0);
        let error = read_regular(&fifo, 1024).unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::InvalidData);
        assert!(error.to_string().contains("a FIFO"), "{error}");
    }

    #[test]
    fn a_file_past_the_limit_is_refused_and_one_at_it_is_read() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("big");
        std::fs::write(&file, vec![b'x'; 2048]).unwrap();
        assert!(
            read_regular(&file, 2047)
                .unwrap_err()
                .to_string()
                .contains("larger than 1 KiB")
        );
        assert_eq!(read_regular(&file, 2048).unwrap().len(), 2048);
    }

    #[test]
    fn a_missing_file_is_not_found() {
        let dir = tempfile::tempdir().unwrap();
        let error = read_regular(&dir.path().join("absent"), 10).unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::NotFound);
    }

    #[test]
    fn a_directory_is_named_as_one() {
        let dir = tempfile::tempdir().unwrap();
        let error = read_regular(dir.path(), 10).unwrap_err();
        assert!(error.to_string().contains("a directory"), "{error}");
    }
}
