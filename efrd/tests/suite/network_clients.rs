//! The network of contained calls end to end, with real parts: efrd in auto mode with a `[network]` allow list, the
//! real efr-proxy (run in the test's own network namespace, where the test's names resolve to a public address on
//! that namespace's loopback: no route leaves the machine, and the proxy's refusal of non-public addresses stays
//! on), the real launcher and its bridge, and real clients inside the sandbox — curl, Python's urllib, `git clone`
//! over https and `pip download` from a package index — against an HTTPS server with the test's own CA (Python's
//! `http.server`, in the same namespace). A denied and an unlisted host are refused, and tool_call_completed says so.

#![allow(clippy::unwrap_used, clippy::expect_used)] // Test code: a failed unwrap is a failed test.

use crate::common;

use std::io::{BufRead, BufReader, Write};
use std::net::{IpAddr, Ipv4Addr};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};

use efr_test_support::binaries::sibling;
use efr_test_support::daemon::{TestDaemon, config_for};
use efr_test_support::netns::NetNs;
use efr_test_support::tls::TestCa;

use common::auto::{bounded, launcher, tempdir};
use common::tools::{event_of, shell_call, start, text, tool_output};
use common::{events_until, model};

/// The server's address: public, so the proxy lets it through, and only on the namespace's loopback.
const SERVER: Ipv4Addr = Ipv4Addr::new(11, 0, 0, 1);

/// A static HTTPS server: serves argv[1] on SERVER:443 with the DER chain argv[2] and PKCS#8 key argv[3].
const STATIC_SERVER: &str = r#"
import base64, functools, http.server, os, ssl, sys, tempfile
root, chain, key = sys.argv[1], sys.argv[2], sys.argv[3]
def pem(kind, der):
    body = base64.encodebytes(der).decode()
    return f"-----BEGIN {kind}-----\n{body}-----END {kind}-----\n"
with open(chain, "rb") as f: ders = f.read().split(b"--efr-cut--")
with open(key, "rb") as f: key_der = f.read()
fd, pem_file = tempfile.mkstemp(suffix=".pem")
with os.fdopen(fd, "w") as f:
    f.write("".join(pem("CERTIFICATE", d) for d in ders))
    f.write(pem("PRIVATE KEY", key_der))
context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
context.load_cert_chain(pem_file)
os.remove(pem_file)
class Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args): pass
server = http.server.ThreadingHTTPServer((sys.argv[4], 443), functools.partial(Quiet, directory=root))
server.socket = context.wrap_socket(server.socket, server_side=True)
print("ready", flush=True)
server.serve_forever()
"#;

/// The files the server serves: a text file, a git repository for the dumb HTTP protocol, and a package index with
/// one wheel.
fn site(root: &Path) {
    std::fs::write(root.join("hello.txt"), "hello through the proxy\n").unwrap();
    let work = root.join("work");
    std::fs::create_dir(&work).unwrap();
    std::fs::write(work.join("README"), "cloned through the proxy\n").unwrap();
    let git = |dir: &Path, args: &[&str]| {
        let status = Command::new("git")
            .args([
                "-c",
                "user.name=t",
                "-c",
                "user.email=t@example.invalid",
                "-c",
                "init.defaultBranch=main",
            ])
            .args(args)
            .current_dir(dir)
            .stdout(Stdio::null())
            .status()
            .expect("git is installed");
        assert!(status.success(), "git {args:?}");
    };
    git(&work, &["init", "-q"]);
    git(&work, &["add", "README"]);
    git(&work, &["commit", "-qm", "first"]);
    git(root, &["clone", "-q", "--bare", "work", "repo.git"]);
    git(&root.join("repo.git"), &["update-server-info"]);
    std::fs::remove_dir_all(&work).unwrap();
    // A wheel is a zip with its metadata; pip download only fetches it.
    let wheel = "demo_pkg-1.0-py3-none-any.whl";
    let packages = root.join("packages");
    std::fs::create_dir(&packages).unwrap();
    let status = Command::new("python3")
        .args([
            "-c",
            "import sys, zipfile\n\
             with zipfile.ZipFile(sys.argv[1], 'w') as z:\n\
             \x20   z.writestr('demo_pkg/__init__.py', '')\n\
             \x20   z.writestr('demo_pkg-1.0.dist-info/METADATA', 'Metadata-Version: 2.1\\nName: demo-pkg\\nVersion: 1.0\\n')\n\
             \x20   z.writestr('demo_pkg-1.0.dist-info/WHEEL', 'Wheel-Version: 1.0\\nGenerator: efr-test\\nRoot-Is-Purelib: true\\nTag: py3-none-any\\n')\n\
             \x20   z.writestr('demo_pkg-1.0.dist-info/RECORD', '')\n",
        ])
        .arg(packages.join(wheel))
        .status()
        .expect("python3 is installed");
    assert!(status.success());
    let index = root.join("simple/demo-pkg");
    std::fs::create_dir_all(&index).unwrap();
    std::fs::write(
        index.join("index.html"),
        format!("<!DOCTYPE html><html><body><a href=\"../../packages/{wheel}\">{wheel}</a></body></html>\n"),
    )
    .unwrap();
}

/// Starts the static server in `netns` and waits for it to listen.
fn serve(netns: &NetNs, root: &Path, ca: &TestCa, names: &[&str], dir: &Path) -> Child {
    let leaf = ca.leaf(names).unwrap();
    let chain: Vec<u8> = leaf
        .chain
        .iter()
        .map(|der| der.to_vec())
        .collect::<Vec<_>>()
        .join(&b"--efr-cut--"[..]);
    std::fs::write(dir.join("chain.der"), chain).unwrap();
    std::fs::write(dir.join("key.der"), leaf.key.secret_der()).unwrap();
    let mut child = netns
        .command("python3")
        .args(["-c", STATIC_SERVER])
        .arg(root)
        .arg(dir.join("chain.der"))
        .arg(dir.join("key.der"))
        .arg(SERVER.to_string())
        .stdout(Stdio::piped())
        .spawn()
        .expect("ip netns exec python3 starts");
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert_eq!(line.trim(), "ready", "the HTTPS server did not start");
    child
}

/// A program in efr-proxy's place that runs the real one inside `netns` (fd 3, the control socket, goes through).
fn proxy_in(netns: &NetNs, dir: &Path) -> std::path::PathBuf {
    let real = sibling(common::efrd_binary(), "efr-proxy", "efr-proxy");
    let wrapper = dir.join("efr-proxy");
    let mut file = std::fs::File::create(&wrapper).unwrap();
    writeln!(
        file,
        "#!/bin/sh\nexec ip netns exec {} {} \"$@\"",
        netns.name(),
        real.display()
    )
    .unwrap();
    drop(file);
    std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755)).unwrap();
    wrapper
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_clients_reach_allowed_hosts_through_the_proxy_and_are_refused_the_rest() {
    let names = ["files.test", "pypi.test", "secret.test"];
    let hosts: Vec<(&str, IpAddr)> = names.iter().map(|n| (*n, IpAddr::V4(SERVER))).collect();
    let netns = NetNs::new(&[IpAddr::V4(SERVER)], &hosts).expect("the test's network namespace");
    let ca = TestCa::new().unwrap();
    let files = tempdir();
    let root = files.path().join("site");
    std::fs::create_dir(&root).unwrap();
    site(&root);
    let mut server = serve(&netns, &root, &ca, &names, files.path());

    let home = tempdir();
    let project = tempdir();
    let ca_file = project.path().join("ca.pem");
    std::fs::write(&ca_file, ca.pem()).unwrap();
    let ca_file = ca_file.display().to_string();
    let wrapper = proxy_in(&netns, files.path());
    let fetch = "curl -sS https://files.test/hello.txt && \
         python3 -c \"import urllib.request; print(urllib.request.urlopen('https://files.test/hello.txt').read().decode().upper())\" && \
         git clone -q https://files.test/repo.git \"$SCRATCH/repo\" && cat \"$SCRATCH/repo/README\" && \
         python3 -m pip download -q --no-deps --disable-pip-version-check --index-url https://pypi.test/simple/ -d \"$SCRATCH/dl\" demo-pkg && ls \"$SCRATCH/dl\"";
    // The unlisted host in a variable: the line's parser does not see it, so the call asks for no exit and the
    // proxy refuses it (the call ends well, so its report asks for none either).
    let refused = "curl -sS https://secret.test/hello.txt; echo \"denied=$?\"; \
         h=elsewhere.test; curl -sS https://$h/; echo \"unlisted=$?\"";
    let server_model = model(vec![
        shell_call("call_fetch", fetch),
        shell_call("call_refused", refused),
        text("done"),
    ])
    .await;
    launcher();
    let config = format!(
        "{}\n[network]\nallow = [\"files.test\", \"pypi.test\"]\ndeny = [\"secret.test\"]\n",
        config_for(&server_model.base_url())
    );
    let wrapper_text = wrapper.display().to_string();
    let efrd = TestDaemon::start(
        common::efrd_binary(),
        home.path(),
        Some(&config),
        &[
            ("OPENAI_API_KEY", "sk-proj-testkey0000000000000000a1b2"),
            ("EFR_PROXY", &wrapper_text),
            ("SSL_CERT_FILE", &ca_file),
            ("CURL_CA_BUNDLE", &ca_file),
            ("GIT_SSL_CAINFO", &ca_file),
            ("PIP_CERT", &ca_file),
        ],
    )
    .expect("efrd starts");
    let mut client = efrd.client().await.unwrap();
    let (_, _, id) = start(&mut client, project.path(), "auto", "fetch").await;
    let events = bounded("the auto turn", events_until(&mut client, id, "turn_completed")).await;

    let output = tool_output(&server_model, "call_fetch");
    for expected in [
        "hello through the proxy",
        "HELLO THROUGH THE PROXY",
        "cloned through the proxy",
        "demo_pkg-1.0-py3-none-any.whl",
    ] {
        assert!(output.contains(expected), "{expected:?} missing: {output}");
    }
    let fetched = event_of(&events, "tool_call_completed", "call_fetch");
    assert_eq!(fetched["exit_code"], 0, "{fetched}");
    assert_eq!(fetched["sandbox"]["proxied"], true, "{fetched}");
    assert!(fetched["sandbox"].get("blocked").is_none(), "{fetched}");

    let refused = event_of(&events, "tool_call_completed", "call_refused");
    let blocked = refused["sandbox"]["blocked"].as_array().cloned().unwrap_or_default();
    let has = |host: &str, reason: &str| {
        blocked
            .iter()
            .any(|b| b["host"] == host && b["port"] == 443 && b["reason"] == reason)
    };
    assert!(has("secret.test", "denied"), "{refused}");
    assert!(has("elsewhere.test", "not_allowed"), "{refused}");
    let told = tool_output(&server_model, "call_refused");
    assert!(
        told.contains("secret.test") && told.contains("denied") && told.contains("elsewhere.test"),
        "the model is told what was refused: {told}"
    );
    assert!(!told.contains("denied=0") && !told.contains("unlisted=0"), "{told}");

    server.kill().unwrap();
    server.wait().unwrap();
}
