//! Opening the files Mino reads (config.toml, SOUL.md, rules files,
//! journals) so that a special file planted under their name cannot hang
//! or exhaust it: opened non-blocking (a FIFO without a writer would block
//! `open` or every `read`), checked to be a regular file on the open file
//! itself (so nothing swapped in after a check is read), and read up to a
//! bound (a link to `/dev/zero` never ends).

use std::fs::File;
use std::io::{self, Read};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::Path;

/// What a file that is not a regular one is, for messages.
pub fn kind_of(meta: &std::fs::Metadata) -> &'static str {
    let kind = meta.file_type();
    if kind.is_dir() {
        "a directory"
    } else if kind.is_fifo() {
        "a FIFO (named pipe)"
    } else if kind.is_socket() {
        "a socket"
    } else if kind.is_char_device() || kind.is_block_device() {
        "a device"
    } else {
        "not a regular file"
    }
}

/// The error for a special file: names what it is and what to do.
fn not_regular(meta: &std::fs::Metadata) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidInput,
        format!("it is {}, not a regular file; Mino reads only regular files (replace or remove it)", kind_of(meta)),
    )
}

/// Opens `path` for reading without blocking, following a symbolic link
/// (the file it leads to is checked), and refuses anything but a regular
/// file. `extra_flags` are added to the open (e.g. `O_NOFOLLOW`); `write`
/// opens it for writing too. A missing file is `NotFound`, as `File::open`.
pub fn open_regular_with(path: &Path, write: bool, extra_flags: i32) -> io::Result<File> {
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(write)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY | extra_flags)
        .open(path)?;
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(not_regular(&meta));
    }
    Ok(file)
}

/// [`open_regular_with`] for reading only.
pub fn open_regular(path: &Path) -> io::Result<File> {
    open_regular_with(path, false, 0)
}

/// The bytes of the regular file at `path`, at most `limit`: a larger file
/// (or one growing past it while read) is an error saying so.
pub fn read_capped(path: &Path, limit: u64) -> io::Result<Vec<u8>> {
    let file = open_regular(path)?;
    let too_large = || {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("it is larger than Mino reads for this file ({limit} bytes); shorten it"),
        )
    };
    if file.metadata()?.len() > limit {
        return Err(too_large());
    }
    let mut bytes = Vec::new();
    file.take(limit + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > limit {
        return Err(too_large());
    }
    Ok(bytes)
}

/// [`read_capped`] as UTF-8 text.
pub fn read_capped_to_string(path: &Path, limit: u64) -> io::Result<String> {
    String::from_utf8(read_capped(path, limit)?)
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, format!("it is not valid UTF-8 ({e})")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn special_files_are_refused_without_blocking_and_reads_are_capped() {
        let dir = tempfile::tempdir().expect("tempdir");
        let fifo = dir.path().join("fifo");
        let c = std::ffi::CString::new(fifo.to_str().expect("utf-8")).expect("c string");
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let err = read_capped(&fifo, 10).expect_err("a FIFO");
        assert!(err.to_string().contains("a FIFO"), "{err}");
        let err = read_capped(Path::new("/dev/zero"), 10).expect_err("a device");
        assert!(err.to_string().contains("a device"), "{err}");
        let big = dir.path().join("big");
        std::fs::write(&big, "x".repeat(11)).expect("write");
        assert!(read_capped(&big, 10).expect_err("too large").to_string().contains("10 bytes"));
        assert_eq!(read_capped(&big, 11).expect("read").len(), 11);
        assert_eq!(read_capped(&dir.path().join("none"), 1).expect_err("absent").kind(), io::ErrorKind::NotFound);
    }
}
