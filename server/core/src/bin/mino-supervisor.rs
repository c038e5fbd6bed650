//! The supervisors alone: `mino-supervisor --supervise` (a command's) and
//! `mino-supervisor --supervise-mcp` (an MCP server's), as `mino-server`
//! runs them. The core's tests use this binary so they need no server; see
//! `mino_core::supervisor` and `mino_core::mcp::process`.

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.split_first() {
        Some((flag, rest)) if flag == mino_core::supervisor::FLAG => {
            std::process::exit(mino_core::supervisor::main(rest))
        }
        Some((flag, rest)) if flag == mino_core::mcp::process::FLAG => {
            std::process::exit(mino_core::mcp::process::main(rest))
        }
        _ => {
            eprintln!(
                "usage: mino-supervisor {}|{}; it is started by Mino, not by hand",
                mino_core::supervisor::FLAG,
                mino_core::mcp::process::FLAG
            );
            std::process::exit(2);
        }
    }
}
