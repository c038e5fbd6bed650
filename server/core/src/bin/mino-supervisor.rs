//! The command supervisor alone: `mino-supervisor --supervise <spec>`, as
//! `mino-server --supervise <spec>` runs it. The core's tests use this binary
//! so they need no server; see `mino_core::supervisor`.

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.split_first() {
        Some((flag, rest)) if flag == mino_core::supervisor::FLAG => {
            std::process::exit(mino_core::supervisor::main(rest))
        }
        _ => {
            eprintln!(
                "usage: mino-supervisor {} <spec>; it is started by Mino, not by hand",
                mino_core::supervisor::FLAG
            );
            std::process::exit(2);
        }
    }
}
