//! The images a question carries: what is accepted (PNG, JPEG, GIF, WebP,
//! by their first bytes; bounded in size and count), how each is kept
//! beside its session (once, by content hash: `<session id>.images/
//! <sha256>.<ext>`, synced with its directory before the `user` record that
//! names it), and how a replay reads it back for the model (the same bytes,
//! checked against the hash; a missing or changed file becomes a notice
//! instead of the image).

use std::io;
use std::path::{Path, PathBuf};

use base64::Engine as _;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// The largest image accepted: OpenAI's documented limit per image.
pub const MAX_IMAGE_BYTES: usize = 20 * 1024 * 1024;
/// The most images one question carries.
pub const MAX_IMAGES: usize = 8;
/// The most image bytes one question carries: their base64 (4/3 of it) must
/// fit in one request with the rest of the conversation (OpenAI accepts
/// 50 MB of request payload), and in one frame of Mino's protocol (64 MiB).
pub const MAX_QUESTION_IMAGE_BYTES: usize = 32 * 1024 * 1024;

/// One image as the `user` record names it (docs/journal.md, "Images").
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ImageRef {
    /// Lowercase hex SHA-256 of the bytes: the file's name and its check.
    pub sha256: String,
    pub mime_type: String,
    pub size: u64,
    /// What the person called it (a file name), when the client said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

impl ImageRef {
    /// How a person is told which image this is: its name, else its hash's start.
    pub fn label(&self) -> String {
        match &self.name {
            Some(name) => name.clone(),
            None => format!("image {}", &self.sha256[..self.sha256.len().min(12)]),
        }
    }
}

/// An image a front door received with a question.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImageInput {
    pub bytes: Vec<u8>,
    pub name: Option<String>,
    /// The type the client declared, if any: it must agree with the bytes.
    pub declared_mime: Option<String>,
}

/// The four formats the model services accept, by their signatures.
pub fn sniff(bytes: &[u8]) -> Option<(&'static str, &'static str)> {
    if bytes.starts_with(b"\x89PNG\r\n\x1a\n") {
        Some(("image/png", "png"))
    } else if bytes.starts_with(&[0xFF, 0xD8, 0xFF]) {
        Some(("image/jpeg", "jpg"))
    } else if bytes.starts_with(b"GIF87a") || bytes.starts_with(b"GIF89a") {
        Some(("image/gif", "gif"))
    } else if bytes.len() >= 12 && &bytes[..4] == b"RIFF" && &bytes[8..12] == b"WEBP" {
        Some(("image/webp", "webp"))
    } else {
        None
    }
}

fn extension_of(mime: &str) -> &'static str {
    match mime {
        "image/png" => "png",
        "image/jpeg" => "jpg",
        "image/gif" => "gif",
        "image/webp" => "webp",
        _ => "bin",
    }
}

/// What bytes that are not an accepted image look like, for the error.
fn what_it_is(bytes: &[u8]) -> String {
    if bytes.is_empty() {
        return "empty".into();
    }
    if bytes.starts_with(b"%PDF") {
        return "a PDF document".into();
    }
    if bytes.starts_with(b"BM") {
        return "a BMP image (not accepted)".into();
    }
    if bytes.starts_with(b"II*\0") || bytes.starts_with(b"MM\0*") {
        return "a TIFF image (not accepted)".into();
    }
    if std::str::from_utf8(&bytes[..bytes.len().min(512)]).is_ok() {
        return "text".into();
    }
    let head: Vec<String> = bytes.iter().take(4).map(|b| format!("{b:02x}")).collect();
    format!("unknown data starting with bytes {}", head.join(" "))
}

/// Why a question's images are refused; the text names the image and what
/// to do, and nothing of the question was kept.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ImageError {
    #[error("the question carries {count} images; at most {MAX_IMAGES} are accepted per question (send the rest in another question)")]
    TooMany { count: usize },
    #[error(
        "{label} is {size} bytes; an image may be at most {MAX_IMAGE_BYTES} bytes (20 MiB): scale it down or crop it"
    )]
    TooLarge { label: String, size: usize },
    #[error("the question's images are {total} bytes together; at most {MAX_QUESTION_IMAGE_BYTES} bytes (32 MiB) are accepted per question: send fewer or smaller images")]
    TooLargeTogether { total: usize },
    #[error("{label} is not an image Mino can send ({what}); PNG, JPEG, GIF and WebP are accepted")]
    NotAnImage { label: String, what: String },
    #[error("{label} was declared {declared} but its bytes are {found}; send it with the right type or none")]
    WrongType { label: String, declared: String, found: String },
    #[error("{label} could not be read: {why}")]
    Unreadable { label: String, why: String },
}

/// An image checked against every bound, ready to be kept.
#[derive(Debug, Clone)]
pub struct CheckedImage {
    pub reference: ImageRef,
    pub bytes: Vec<u8>,
}

fn input_label(index: usize, name: &Option<String>) -> String {
    match name {
        Some(name) => format!("image {} ({name})", index + 1),
        None => format!("image {}", index + 1),
    }
}

/// Checks a question's images: count, each one's size and type, the total.
pub fn check(images: Vec<ImageInput>) -> Result<Vec<CheckedImage>, ImageError> {
    if images.len() > MAX_IMAGES {
        return Err(ImageError::TooMany { count: images.len() });
    }
    let mut total = 0usize;
    let mut checked = Vec::with_capacity(images.len());
    for (index, image) in images.into_iter().enumerate() {
        let label = input_label(index, &image.name);
        if image.bytes.len() > MAX_IMAGE_BYTES {
            return Err(ImageError::TooLarge { label, size: image.bytes.len() });
        }
        total += image.bytes.len();
        if total > MAX_QUESTION_IMAGE_BYTES {
            return Err(ImageError::TooLargeTogether { total });
        }
        let Some((mime, _)) = sniff(&image.bytes) else {
            return Err(ImageError::NotAnImage { label, what: what_it_is(&image.bytes) });
        };
        if let Some(declared) = image.declared_mime.as_deref() {
            let declared_norm = if declared.eq_ignore_ascii_case("image/jpg") { "image/jpeg" } else { declared };
            if !declared_norm.eq_ignore_ascii_case(mime) {
                return Err(ImageError::WrongType { label, declared: declared.to_string(), found: mime.to_string() });
            }
        }
        let sha256 = hex(&Sha256::digest(&image.bytes));
        checked.push(CheckedImage {
            reference: ImageRef {
                sha256,
                mime_type: mime.to_string(),
                size: image.bytes.len() as u64,
                name: image.name.map(|n| short_name(&n)),
            },
            bytes: image.bytes,
        });
    }
    Ok(checked)
}

/// A client's name for an image, kept short and on one line.
fn short_name(name: &str) -> String {
    let one_line: String = name.chars().map(|c| if c.is_control() { ' ' } else { c }).collect();
    one_line.chars().take(200).collect()
}

/// Reads an image a client named by path (the terminal's `/image`,
/// Neovim's `:MinoImage`): a regular file only, at most the per-image bound.
pub fn read_path(index: usize, path: &Path) -> Result<ImageInput, ImageError> {
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned());
    let label = input_label(index, &Some(path.display().to_string()));
    let bytes = crate::files::read_capped(path, MAX_IMAGE_BYTES as u64).map_err(|e| {
        let size = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
        if e.kind() == io::ErrorKind::InvalidData && size > MAX_IMAGE_BYTES as u64 {
            ImageError::TooLarge { label: label.clone(), size: size as usize }
        } else {
            ImageError::Unreadable { label: label.clone(), why: e.to_string() }
        }
    })?;
    Ok(ImageInput { bytes, name, declared_mime: None })
}

/// Decodes a client's base64 image data.
pub fn decode_base64(index: usize, name: &Option<String>, data: &str) -> Result<Vec<u8>, ImageError> {
    // Bounded before decoding: base64 is 4/3 of the bytes.
    if data.len() > (MAX_IMAGE_BYTES / 3 + 1) * 4 + 4 {
        return Err(ImageError::TooLarge { label: input_label(index, name), size: data.len() / 4 * 3 });
    }
    base64::engine::general_purpose::STANDARD.decode(data.trim()).map_err(|e| ImageError::Unreadable {
        label: input_label(index, name),
        why: format!("its data is not valid base64 ({e})"),
    })
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The directory beside a session file that holds its images.
pub fn dir_for(session_path: &Path) -> PathBuf {
    let name = session_path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    session_path.with_file_name(format!("{name}.images"))
}

/// Where an image is kept in `dir`.
pub fn path_in(dir: &Path, image: &ImageRef) -> PathBuf {
    dir.join(format!("{}.{}", image.sha256, extension_of(&image.mime_type)))
}

/// Keeps each image in `dir` (created, and its parent synced, when new),
/// each file written and synced and the directory synced, so that every
/// image is on disk before anything names it. An image already kept (the
/// same hash, whole) is not written again.
pub fn store(dir: &Path, images: &[CheckedImage]) -> Result<(), String> {
    if images.is_empty() {
        return Ok(());
    }
    if !dir.is_dir() {
        std::fs::create_dir(dir)
            .or_else(|e| if e.kind() == io::ErrorKind::AlreadyExists { Ok(()) } else { Err(e) })
            .map_err(|e| format!("could not create {}: {e}", dir.display()))?;
        if let Some(parent) = dir.parent() {
            crate::durable::sync_directory(parent).map_err(|e| format!("could not sync {}: {e}", parent.display()))?;
        }
    }
    for image in images {
        let path = path_in(dir, &image.reference);
        if read_checked(&path, &image.reference).is_ok() {
            continue;
        }
        crate::durable::replace(&path, &image.bytes, 0o600)
            .map_err(|(step, e)| format!("could not {} {}: {e}", step.as_str(), path.display()))?;
        fail::fail_point!("images::after_image_sync");
    }
    Ok(())
}

/// The kept bytes of `image`, checked: the file must hold exactly the bytes
/// its hash names.
pub fn read_checked(path: &Path, image: &ImageRef) -> Result<Vec<u8>, String> {
    let bytes = crate::files::read_capped(path, MAX_IMAGE_BYTES as u64).map_err(|e| match e.kind() {
        io::ErrorKind::NotFound => format!("{} is missing", path.display()),
        _ => format!("{} could not be read: {e}", path.display()),
    })?;
    if bytes.len() as u64 != image.size || hex(&Sha256::digest(&bytes)) != image.sha256 {
        return Err(format!("{} does not hold the bytes the session recorded (its content changed)", path.display()));
    }
    Ok(bytes)
}

/// The text the model reads in place of an image that could not be read.
pub fn unavailable_notice(image: &ImageRef, why: &str) -> String {
    format!(
        "[Mino runtime notice: the person attached {} ({}, {} bytes) to this message, but it cannot be sent: {why}. Tell the person if it matters.]",
        image.label(),
        image.mime_type,
        image.size
    )
}

/// The bytes as standard base64 (what `mino/image` answers).
pub fn base64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// A `data:` URL of the bytes, as both providers take an image.
pub fn data_url(mime: &str, bytes: &[u8]) -> String {
    format!("data:{mime};base64,{}", base64::engine::general_purpose::STANDARD.encode(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn png() -> Vec<u8> {
        let mut bytes = b"\x89PNG\r\n\x1a\n".to_vec();
        bytes.extend_from_slice(&[0u8; 32]);
        bytes
    }

    #[test]
    fn the_four_formats_are_told_by_their_first_bytes_and_nothing_else_is_taken() {
        assert_eq!(sniff(&png()).map(|s| s.0), Some("image/png"));
        assert_eq!(sniff(&[0xFF, 0xD8, 0xFF, 0xE0]).map(|s| s.0), Some("image/jpeg"));
        assert_eq!(sniff(b"GIF89a....").map(|s| s.0), Some("image/gif"));
        assert_eq!(sniff(b"RIFF\0\0\0\0WEBPVP8 ").map(|s| s.0), Some("image/webp"));
        assert_eq!(sniff(b"RIFF\0\0\0\0WAVE"), None);
        let err =
            check(vec![ImageInput { bytes: b"hello".to_vec(), name: Some("notes.txt".into()), declared_mime: None }])
                .expect_err("text");
        assert_eq!(
            err.to_string(),
            "image 1 (notes.txt) is not an image Mino can send (text); PNG, JPEG, GIF and WebP are accepted"
        );
    }

    #[test]
    fn bounds_name_the_image_and_the_limit() {
        let big =
            ImageInput { bytes: vec![0u8; MAX_IMAGE_BYTES + 1], name: Some("big.png".into()), declared_mime: None };
        assert!(check(vec![big]).expect_err("too large").to_string().contains("at most 20971520 bytes"));
        let many = vec![ImageInput { bytes: png(), name: None, declared_mime: None }; MAX_IMAGES + 1];
        assert!(check(many).expect_err("too many").to_string().contains("at most 8"));
        let wrong = ImageInput { bytes: png(), name: None, declared_mime: Some("image/jpeg".into()) };
        assert!(check(vec![wrong]).expect_err("wrong type").to_string().contains("declared image/jpeg"));
    }

    #[test]
    fn an_image_is_kept_once_and_read_back_checked() {
        let dir = tempfile::tempdir().expect("tempdir");
        let images = dir.path().join("s.images");
        let checked = check(vec![ImageInput { bytes: png(), name: None, declared_mime: Some("image/png".into()) }])
            .expect("checked");
        store(&images, &checked).expect("stored");
        store(&images, &checked).expect("stored again");
        assert_eq!(std::fs::read_dir(&images).expect("dir").count(), 1);
        let path = path_in(&images, &checked[0].reference);
        assert_eq!(read_checked(&path, &checked[0].reference).expect("read"), png());
        std::fs::write(&path, b"changed").expect("write");
        assert!(read_checked(&path, &checked[0].reference).expect_err("changed").contains("content changed"));
        std::fs::remove_file(&path).expect("remove");
        assert!(read_checked(&path, &checked[0].reference).expect_err("missing").contains("missing"));
    }
}
