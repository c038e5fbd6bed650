//! The server-sent-events parser and response accumulator on arbitrary
//! bytes, delivered in chunks of a size chosen by the first byte.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Some((&chunk, body)) = data.split_first() {
        let _ = mino_core::model::parse_sse_body(body, usize::from(chunk % 64) + 1);
    }
});
