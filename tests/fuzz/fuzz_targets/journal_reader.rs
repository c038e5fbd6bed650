//! The journal reader on arbitrary bytes: verifying a file and decoding a
//! line must return a result, never panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = mino_core::journal::verify_bytes(data);
    let _ = mino_core::journal::record::decode_line(data);
});
