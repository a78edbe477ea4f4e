//! `efr-scripted-model SCRIPT.json`: the scripted model server as a process, for tests that start real binaries.
//!
//! It listens on `127.0.0.1` on a free port, prints the port alone on one line of stdout, and serves the script until
//! it is killed. A script that cannot be read or parsed ends it with status 2 and a message on stderr.

use std::io::Write;
use std::process::ExitCode;

use efr_test_support::scripted::{Script, ScriptedModel};

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let mut args = std::env::args_os().skip(1);
    let (Some(path), None) = (args.next(), args.next()) else {
        eprintln!("usage: efr-scripted-model SCRIPT.json");
        return ExitCode::from(2);
    };
    let script: Script = match std::fs::read(&path)
        .map_err(|e| e.to_string())
        .and_then(|text| serde_json::from_slice(&text).map_err(|e| format!("not a script: {e}")))
    {
        Ok(script) => script,
        Err(error) => {
            eprintln!("efr-scripted-model: {}: {error}", path.to_string_lossy());
            return ExitCode::from(2);
        }
    };
    let server = match ScriptedModel::start(script).await {
        Ok(server) => server,
        Err(error) => {
            eprintln!("efr-scripted-model: cannot listen: {error}");
            return ExitCode::from(1);
        }
    };
    let mut stdout = std::io::stdout().lock();
    if writeln!(stdout, "{}", server.port())
        .and_then(|()| stdout.flush())
        .is_err()
    {
        return ExitCode::from(1);
    }
    drop(stdout);
    std::future::pending::<()>().await;
    ExitCode::SUCCESS
}
