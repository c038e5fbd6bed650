//! `mino-server`'s command line: what language clients pass is accepted,
//! anything else is refused by name.

use mino_e2e::{options_in, server_bin, wire, work_dir, MockModel, Reply, Server, Spawn, TIMEOUT};

/// vscode-languageclient appends `--stdio` for `TransportKind.stdio`; the
/// server must serve as without it, a whole turn included.
#[tokio::test(flavor = "multi_thread")]
async fn stdio_flag_is_accepted_and_the_server_serves_a_turn() {
    let mock = MockModel::start(vec![Reply::text("hello from the model")]).await.expect("mock");
    let mut server = Server::spawn_with(Spawn {
        base_url: Some(mock.base_url()),
        args: vec!["--stdio".into()],
        ..Default::default()
    })
    .await;
    let cwd = work_dir(server.home());
    let caps = Server::capabilities(&server.initialize(&options_in(&cwd)).await.expect("initialize with --stdio"));
    assert!(!caps.session_id.is_empty());
    let turn: wire::ChatResult = server
        .call(wire::method::CHAT, &wire::ChatParams { text: "Say hello".into(), ..Default::default() })
        .await
        .expect("chat");
    let notes = server.turn_notifications(&turn.turn_id, TIMEOUT).await;
    assert_eq!(notes.last().expect("end").parse::<wire::TurnEnded>().status, wire::TurnStatus::Completed);
    server.close_stdin();
    assert_eq!(server.wait(TIMEOUT).await.code(), Some(0));
}

#[test]
fn an_unknown_argument_is_refused_by_name() {
    let output = std::process::Command::new(server_bin()).arg("--sdtio").output().expect("run mino-server");
    assert!(!output.status.success());
    assert!(output.stdout.is_empty(), "nothing on the protocol stream");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("unknown argument \"--sdtio\"") && stderr.contains("--help"), "{stderr}");
}

#[test]
fn help_documents_the_stdio_flag() {
    let output = std::process::Command::new(server_bin()).args(["--stdio", "--help"]).output().expect("run --help");
    assert!(output.status.success(), "{output:?}");
    let help = String::from_utf8_lossy(&output.stdout);
    assert!(help.lines().any(|l| l.trim_start().starts_with("--stdio")), "{help}");
}
