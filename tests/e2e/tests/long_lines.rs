//! A damaged line far longer than any record (here 300 MB of garbage) is
//! judged without being held in memory: as the last line it is cut as a torn
//! tail, in the middle it refuses the file untouched; either way the
//! server's peak memory stays within a bound set by the longest record, not
//! by the garbage. A memory bound, not a timing assertion.

use std::io::Write;
use std::path::Path;

use mino_e2e::{options_in, wire, work_dir, MockModel, Reply, Server, TIMEOUT};

const GARBAGE_BYTES: usize = 300 * 1000 * 1000;
/// How much more than opening the clean session the server may peak at.
const BOUND_ABOVE_BASELINE: u64 = 64 * 1024 * 1024;

fn append_garbage(path: &Path, then: &[u8]) {
    let mut file = std::fs::OpenOptions::new().append(true).open(path).expect("open the journal");
    let block = vec![b'x'; 1 << 20];
    let mut left = GARBAGE_BYTES;
    while left > 0 {
        let n = left.min(block.len());
        file.write_all(&block[..n]).expect("append garbage");
        left -= n;
    }
    file.write_all(then).expect("append");
}

/// Opens the session in `home` in a fresh server; returns its answer to
/// `initialize`, its `mino/recovery` (when it opened) and its peak memory.
async fn open(
    home: &Path,
    mock: &MockModel,
) -> (Result<serde_json::Value, mino_e2e::RpcError>, Option<wire::RecoveryNotification>, u64) {
    let mut server = Server::spawn_in(home, mock).await;
    let answer = server.initialize(&options_in(&work_dir(home))).await;
    let recovery = match answer {
        Ok(_) => Some(server.next_notification(wire::method::RECOVERY, TIMEOUT).await.parse()),
        Err(_) => None,
    };
    let peak = server.peak_rss().expect("VmHWM of the server");
    server.close_stdin();
    assert!(server.wait(TIMEOUT).await.success());
    (answer, recovery, peak)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_300_mb_garbage_line_is_judged_with_bounded_memory() {
    let mock = MockModel::start(vec![Reply::text("an answer worth keeping")]).await.expect("mock");
    let mut server = Server::spawn(&mock).await;
    let home = server.home().to_path_buf();
    let _keep = server.keep_home();
    let caps = Server::capabilities(&server.initialize(&options_in(&work_dir(&home))).await.expect("initialize"));
    let turn: wire::ChatResult = server
        .call(wire::method::CHAT, &wire::ChatParams { text: "hello".into(), ..Default::default() })
        .await
        .expect("chat");
    server.turn_notifications(&turn.turn_id, TIMEOUT).await;
    server.close_stdin();
    assert!(server.wait(TIMEOUT).await.success());
    let journal = Path::new(&caps.journal_path);
    let good = std::fs::read(journal).expect("journal");

    let (answer, _, baseline) = open(&home, &mock).await;
    answer.expect("the clean session opens");

    // A torn last line of 300 MB: cut, reported, and never buffered whole.
    append_garbage(journal, b"");
    let (answer, recovery, torn_peak) = open(&home, &mock).await;
    answer.expect("a torn tail is cut, not refused");
    let repairs = recovery.expect("recovery").repairs;
    assert!(repairs.iter().any(|r| r.contains("torn last line")), "{repairs:?}");
    assert_eq!(std::fs::read(journal).expect("journal"), good, "cut back to the last whole record");

    // The same line in the middle: refused, the file left as it was.
    append_garbage(journal, b"\n{\"v\":2}\n");
    let damaged_len = std::fs::metadata(journal).expect("journal").len();
    let (answer, _, middle_peak) = open(&home, &mock).await;
    let err = answer.expect_err("a long line in the middle is damage");
    assert_eq!(err.code, wire::error_code::SESSION_UNAVAILABLE, "{err}");
    assert!(err.message.contains(&caps.journal_path) && err.message.contains("line 5"), "{err}");
    assert!(err.message.contains("longer than"), "says what is wrong: {err}");
    assert_eq!(std::fs::metadata(journal).expect("journal").len(), damaged_len, "untouched");

    let mib = |b: u64| b as f64 / (1024.0 * 1024.0);
    println!(
        "peak memory (VmHWM) of the server opening: the clean session {:.1} MiB; with a 300 MB torn last line {:.1} MiB; with a 300 MB line in the middle {:.1} MiB (bound: baseline + {:.0} MiB)",
        mib(baseline),
        mib(torn_peak),
        mib(middle_peak),
        mib(BOUND_ABOVE_BASELINE)
    );
    assert!(torn_peak < baseline + BOUND_ABOVE_BASELINE, "torn tail: {torn_peak} bytes vs baseline {baseline}");
    assert!(middle_peak < baseline + BOUND_ABOVE_BASELINE, "middle line: {middle_peak} bytes vs baseline {baseline}");
}
