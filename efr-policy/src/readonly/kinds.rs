//! Commands that use the network, run as another user, or may wait for input at the terminal.
//!
//! # Network
//!
//! Always: `curl`, `wget`, `ssh`, `scp`, `sftp`, `ftp`, `lftp`, `telnet`, `nc`, `ncat`, `netcat`, `socat`, `ping`,
//! `ping6`, `dig`, `nslookup`, `host`, `whois`, `traceroute`, `tracepath`, `mosh`, `ssh-copy-id`, `nmap`, `gh`,
//! `http`/`https` (HTTPie), `xh`, `aria2c`, `websocat`, `wscat`, `npx`, `pnpx`, `bunx`, `uvx`, `kubectl`, `helm`,
//! `aws`, `gcloud`, `az`. `rsync` with a remote side (`host:path`, `rsync://`, `-e`/`--rsh`). `git`: see
//! [`super::git`]. Package managers, with the subcommands that fetch (see [`PACKAGE_NETWORK`]): `apt`, `apt-get`,
//! `aptitude`, `dnf`, `yum`, `zypper`, `apk`, `pacman` (`-S…`), `brew`, `snap`, `flatpak`, `pip`, `pip3`, `pipx`,
//! `python -m pip`, `uv`, `poetry`, `conda`, `mamba`, `npm`, `pnpm`, `yarn` (also alone), `bun`, `cargo`, `gem`,
//! `bundle`, `go`, `composer`, `docker`/`podman` (`pull`, `push`, `login`, `search`).
//!
//! # Privileged
//!
//! `sudo`, `doas`, `su`, `pkexec`, `run0`.
//!
//! # Interactive
//!
//! `sudo`/`doas`/`run0` (a password; not `sudo -n`), `su`, `pkexec`, `ssh`, `mosh`, `telnet`, `ftp`, `sftp`,
//! `passwd`, editors (`vi`, `vim`, `nvim`, `nano`, `emacs`, `micro`, `pico`, `hx`, `kak`), pagers (`less`, `more`,
//! `most`, `man`, `info`), monitors (`top`, `htop`, `btop`, `atop`), `tmux`, `screen`, `fzf`, and the git
//! subcommands of [`super::git::interactive`]. When their standard input is the terminal (not a pipe, a file, a
//! heredoc): the `read` builtin and REPLs started without a program (`python`, `python3`, `ipython`, `node`,
//! `deno`, `irb`, `ghci`, `lua`, `julia`, `R`, `bc`, `psql` without `-c`/`-f`/`-l`, `mysql`/`mariadb` without
//! `-e`, `sqlite3` without SQL, `redis-cli` without a command, `gdb`). Shells started without `-c` are handled by
//! [`crate::analysis`] the same way.

use super::git;
use crate::shell::Word;

/// Whether `name` runs its command as another user.
#[must_use]
pub fn privileged(name: &str) -> bool {
    matches!(name, "sudo" | "doas" | "su" | "pkexec" | "run0")
}

const ALWAYS_NETWORK: &[&str] = &[
    "curl",
    "wget",
    "ssh",
    "scp",
    "sftp",
    "ftp",
    "lftp",
    "telnet",
    "nc",
    "ncat",
    "netcat",
    "socat",
    "ping",
    "ping6",
    "dig",
    "nslookup",
    "host",
    "whois",
    "traceroute",
    "tracepath",
    "mosh",
    "ssh-copy-id",
    "nmap",
    "gh",
    "http",
    "https",
    "xh",
    "aria2c",
    "websocat",
    "wscat",
    "npx",
    "pnpx",
    "bunx",
    "uvx",
    "kubectl",
    "helm",
    "aws",
    "gcloud",
    "az",
];

/// Package managers and the first arguments that make them fetch from the network.
pub const PACKAGE_NETWORK: &[(&str, &[&str])] = &[
    (
        "apt",
        &[
            "install",
            "update",
            "upgrade",
            "dist-upgrade",
            "full-upgrade",
            "download",
            "source",
            "build-dep",
            "reinstall",
        ],
    ),
    (
        "apt-get",
        &[
            "install",
            "update",
            "upgrade",
            "dist-upgrade",
            "download",
            "source",
            "build-dep",
            "reinstall",
        ],
    ),
    (
        "aptitude",
        &[
            "install",
            "update",
            "upgrade",
            "safe-upgrade",
            "full-upgrade",
            "download",
            "reinstall",
        ],
    ),
    (
        "dnf",
        &[
            "install",
            "update",
            "upgrade",
            "reinstall",
            "download",
            "makecache",
            "distro-sync",
        ],
    ),
    (
        "yum",
        &["install", "update", "upgrade", "reinstall", "makecache", "distro-sync"],
    ),
    (
        "zypper",
        &["install", "in", "update", "up", "refresh", "ref", "dist-upgrade", "dup"],
    ),
    ("apk", &["add", "update", "upgrade", "fetch"]),
    ("brew", &["install", "upgrade", "update", "fetch", "tap", "reinstall"]),
    ("snap", &["install", "refresh", "download"]),
    ("flatpak", &["install", "update", "remote-add"]),
    ("pip", &["install", "download", "index", "wheel"]),
    ("pip3", &["install", "download", "index", "wheel"]),
    ("pipx", &["install", "upgrade", "run", "inject", "reinstall"]),
    ("uv", &["add", "sync", "lock", "tool", "run", "pip", "python"]),
    ("poetry", &["add", "install", "update", "lock", "publish"]),
    ("conda", &["install", "create", "update", "search"]),
    ("mamba", &["install", "create", "update", "search"]),
    (
        "npm",
        &[
            "install", "i", "add", "ci", "update", "up", "upgrade", "publish", "exec", "x", "view", "info", "outdated",
            "audit", "login", "init", "create",
        ],
    ),
    (
        "pnpm",
        &[
            "add", "install", "i", "update", "up", "upgrade", "dlx", "publish", "create",
        ],
    ),
    ("yarn", &["add", "install", "upgrade", "up", "dlx", "publish", "create"]),
    ("bun", &["add", "install", "i", "update", "x", "create", "publish"]),
    (
        "cargo",
        &[
            "install", "add", "fetch", "update", "publish", "search", "login", "owner", "yank",
        ],
    ),
    ("gem", &["install", "update", "push", "fetch"]),
    ("bundle", &["install", "update", "add"]),
    ("go", &["get", "install", "mod"]),
    ("composer", &["install", "require", "update", "create-project"]),
    ("docker", &["pull", "push", "login", "search"]),
    ("podman", &["pull", "push", "login", "search"]),
];

/// Whether `name args…` uses the network.
#[must_use]
pub fn network(name: &str, args: &[Word]) -> bool {
    if ALWAYS_NETWORK.contains(&name) {
        return true;
    }
    let values: Vec<&str> = args.iter().filter_map(|w| w.value.as_deref()).collect();
    let first_operand = values.iter().copied().find(|v| !v.starts_with('-'));
    match name {
        "git" => git::network(args),
        "rsync" => values.iter().any(|v| {
            v.starts_with("rsync://")
                || *v == "-e"
                || v.starts_with("--rsh")
                || v.split_once(':')
                    .is_some_and(|(host, _)| !host.is_empty() && !host.contains('/'))
        }),
        "pacman" | "yay" | "paru" => values.iter().any(|v| v.starts_with("-S") || v.starts_with("--sync")),
        "yarn" => first_operand.is_none_or(|sub| package_fetches("yarn", sub)),
        "python" | "python3" => {
            values.first() == Some(&"-m")
                && values.get(1).is_some_and(|m| *m == "pip" || *m == "ensurepip")
                && values.get(2).is_some_and(|sub| package_fetches("pip", sub))
        }
        _ => first_operand.is_some_and(|sub| package_fetches(name, sub)),
    }
}

fn package_fetches(manager: &str, sub: &str) -> bool {
    PACKAGE_NETWORK
        .iter()
        .any(|(name, subs)| *name == manager && subs.contains(&sub))
}

/// Commands that read the terminal itself (`/dev/tty`), whatever their standard input is.
const EDITORS_AND_SCREENS: &[&str] = &[
    "su", "pkexec", "ssh", "mosh", "telnet", "ftp", "sftp", "passwd", "vi", "vim", "nvim", "nano", "emacs", "micro",
    "pico", "hx", "kak", "less", "more", "most", "man", "info", "top", "htop", "btop", "atop", "tmux", "screen", "fzf",
];

/// Whether `name args…` may wait for input at the terminal. `stdin_terminal` says whether its standard input is
/// the terminal: a REPL or `read` whose input is a pipe or a file reads that instead (`echo 1+1 | bc`).
#[must_use]
pub fn interactive(name: &str, args: &[Word], stdin_terminal: bool) -> bool {
    if EDITORS_AND_SCREENS.contains(&name) {
        return true;
    }
    if !stdin_terminal && !matches!(name, "sudo" | "doas" | "run0" | "git") {
        return false;
    }
    let values: Vec<&str> = args.iter().filter_map(|w| w.value.as_deref()).collect();
    let has = |opts: &[&str]| {
        values
            .iter()
            .any(|v| opts.iter().any(|o| v == o || v.starts_with(&format!("{o}="))))
    };
    let operands = values.iter().filter(|v| !v.starts_with('-')).count();
    match name {
        "sudo" | "doas" | "run0" => !has(&["-n", "--non-interactive"]),
        "read" | "ipython" | "gdb" | "bc" => true,
        "git" => git::interactive(args),
        "python" | "python2" | "python3" | "node" | "deno" | "irb" | "ghci" | "lua" | "julia" | "R" => {
            has(&["-i"]) || (operands == 0 && !has(&["-c", "-m", "-e", "-p", "--eval", "--print", "-"]))
        }
        "psql" => !has(&["-c", "--command", "-f", "--file", "-l", "--list"]),
        "mysql" | "mariadb" => !has(&["-e", "--execute"]),
        "sqlite3" => operands < 2,
        "redis-cli" => operands == 0,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(line: &str) -> Vec<Word> {
        line.split_whitespace().map(Word::literal).collect()
    }

    #[test]
    fn package_installs_are_network_and_local_queries_are_not() {
        assert!(network("apt-get", &w("install -y jq")));
        assert!(network("npm", &w("i left-pad")));
        assert!(network("yarn", &[]));
        assert!(!network("yarn", &w("test")));
        assert!(network("python3", &w("-m pip install requests")));
        assert!(!network("cargo", &w("build")));
        assert!(network("cargo", &w("add serde")));
        assert!(network("rsync", &w("-a src/ host:dst/")));
        assert!(!network("rsync", &w("-a src/ dst/")));
        assert!(network("pacman", &w("-Syu")));
    }

    #[test]
    fn repls_without_a_program_wait_for_input() {
        assert!(interactive("python3", &[], true));
        assert!(!interactive("python3", &[], false));
        assert!(!interactive("python3", &w("script.py"), true));
        assert!(!interactive("python3", &w("-c print(1)"), true));
        assert!(interactive("psql", &w("mydb"), true));
        assert!(!interactive("psql", &w("mydb -c select"), true));
        assert!(interactive("sudo", &w("ls"), false));
        assert!(!interactive("sudo", &w("-n ls"), true));
        assert!(interactive("less", &[], false));
    }
}
