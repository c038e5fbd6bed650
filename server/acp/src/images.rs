//! A prompt's `image` content blocks (ACP `promptCapabilities.image`): taken
//! out of the prompt before its text is read, each decoded into an image the
//! core checks and keeps like any other question's (`mino_core::images`).
//! Only translation: the bounds and the journal are the core's.

use agent_client_protocol::v1::schema::{ContentBlock, PromptCapabilities};
use agent_client_protocol::Error;
use mino_core::images::{self, ImageError, ImageInput};
use serde_json::Value;

/// The prompt without its image blocks, and the images, in order. An image
/// block without inline `data` (only a `uri`) is refused: Mino keeps the
/// bytes it sent, and fetches nothing.
pub fn split_images(blocks: &[ContentBlock]) -> Result<(Vec<ContentBlock>, Vec<ImageInput>), Error> {
    let mut rest = Vec::with_capacity(blocks.len());
    let mut found = Vec::new();
    for block in blocks {
        let value = serde_json::to_value(block).map_err(|e| crate::internal(e.to_string()))?;
        if value.get("type").and_then(Value::as_str) != Some("image") {
            rest.push(block.clone());
            continue;
        }
        let index = found.len();
        if index >= images::MAX_IMAGES {
            let count = blocks
                .iter()
                .filter(|b| serde_json::to_value(b).ok().and_then(|v| v.get("type").cloned()) == Some("image".into()))
                .count();
            return Err(crate::invalid_params(ImageError::TooMany { count }.to_string()));
        }
        let name =
            value.get("uri").and_then(Value::as_str).map(|uri| uri.rsplit('/').next().unwrap_or(uri).to_string());
        let data = value.get("data").and_then(Value::as_str).unwrap_or("");
        if data.is_empty() {
            return Err(crate::invalid_params(format!(
                "image {} has no data; Mino takes images with their bytes inline (base64 `data`)",
                index + 1
            )));
        }
        let bytes = images::decode_base64(index, &name, data).map_err(|e| crate::invalid_params(e.to_string()))?;
        let declared_mime = value.get("mimeType").and_then(Value::as_str).map(str::to_string);
        found.push(ImageInput { bytes, name, declared_mime });
    }
    Ok((rest, found))
}

/// What Mino accepts in a prompt (`promptCapabilities`): images (PNG, JPEG,
/// GIF, WebP) and embedded text context; no audio.
pub fn prompt_capabilities() -> PromptCapabilities {
    PromptCapabilities::new().image(true).audio(false).embedded_context(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn typed(value: Value) -> ContentBlock {
        serde_json::from_value(value).expect("a content block")
    }

    #[test]
    fn image_blocks_are_taken_out_in_order_and_bad_ones_refused_by_name() {
        let png = "iVBORw0KGgoAAAA=";
        let (rest, found) = split_images(&[
            typed(serde_json::json!({ "type": "text", "text": "What is it?" })),
            typed(
                serde_json::json!({ "type": "image", "data": png, "mimeType": "image/png", "uri": "file:///w/a.png" }),
            ),
        ])
        .expect("split");
        assert_eq!(rest.len(), 1);
        assert_eq!(found.len(), 1);
        assert!(found[0].bytes.starts_with(b"\x89PNG"));
        assert_eq!(found[0].name.as_deref(), Some("a.png"));
        let refused =
            split_images(&[typed(serde_json::json!({ "type": "image", "data": "!!", "mimeType": "image/png" }))])
                .expect_err("not base64");
        assert!(refused.message.contains("not valid base64"), "{}", refused.message);
    }
}
