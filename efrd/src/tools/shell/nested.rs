//! `nested_shell`: does a command line start a shell or a REPL that reads command lines from the terminal?
//!
//! A manual answer (`input.respond` with `manual`) types into whatever holds the terminal; for a nested shell or a
//! REPL that would let a client run arbitrary commands past the policy, so such a call gets no `manual_input` and a
//! manual answer is refused with conflict (docs/protocol.md, "The contract": "manual_input").
//!
//! The check reads the line as a shell would, roughly: it splits it into simple commands at `;`, `&`, `&&`, `||`,
//! `|`, newlines and parentheses, removes quotes, skips assignments, redirections and wrappers (`sudo`, `env`,
//! `exec`, `nohup`, `time`, `timeout`, ...), and looks at the program and its arguments. A command whose standard
//! input is a pipe or a redirection does not read the terminal and never counts. It errs toward "nested": a false
//! yes only loses the manual-input offer.

/// Whether `command_line` starts an interactive shell or a REPL on the terminal: a shell without `-c` or a script
/// (`bash`, `sudo -i`, `su`, `ssh host`), or an interpreter without a script or an inline program (`python3`,
/// `node`, `psql db`, `irb`, ...).
pub fn nested_shell(command_line: &str) -> bool {
    commands(command_line)
        .iter()
        .any(|command| !command.stdin_redirected && starts_repl(&command.words))
}

#[derive(Debug, Default)]
struct Command {
    words: Vec<String>,
    stdin_redirected: bool,
}

/// Splits a line into simple commands with quotes removed.
fn commands(line: &str) -> Vec<Command> {
    let mut split = Splitter {
        chars: line.chars().peekable(),
        out: Vec::new(),
        command: Command::default(),
        word: String::new(),
        in_word: false,
        skip_next: false,
    };
    while let Some(c) = split.chars.next() {
        match c {
            '\\' => split.escaped(),
            '\'' => split.single_quoted(),
            '"' => split.double_quoted(),
            '#' if !split.in_word => split.comment(),
            ';' | '&' | '|' | '\n' | '(' | ')' => split.separator(c),
            '<' | '>' => split.redirect(c),
            c if c.is_whitespace() => split.end_word(),
            _ => {
                split.in_word = true;
                split.word.push(c);
            }
        }
    }
    split.end_word();
    let mut out = split.out;
    out.push(split.command);
    out.retain(|c| !c.words.is_empty());
    out
}

/// The state of [`commands`] as it reads a line.
struct Splitter<'a> {
    chars: std::iter::Peekable<std::str::Chars<'a>>,
    /// The simple commands so far.
    out: Vec<Command>,
    command: Command,
    word: String,
    in_word: bool,
    /// Set after a redirection operator: the next word is its target, not an argument.
    skip_next: bool,
}

impl Splitter<'_> {
    fn end_word(&mut self) {
        if self.in_word {
            if self.skip_next {
                self.skip_next = false;
            } else {
                self.command.words.push(std::mem::take(&mut self.word));
            }
            self.word.clear();
            self.in_word = false;
        }
    }

    /// After `\`: the next character as it is; a newline (a continued line) is dropped.
    fn escaped(&mut self) {
        self.in_word = true;
        match self.chars.next() {
            Some('\n') | None => {}
            Some(next) => self.word.push(next),
        }
    }

    fn single_quoted(&mut self) {
        self.in_word = true;
        for next in self.chars.by_ref() {
            if next == '\'' {
                break;
            }
            self.word.push(next);
        }
    }

    fn double_quoted(&mut self) {
        self.in_word = true;
        while let Some(next) = self.chars.next() {
            match next {
                '"' => break,
                '\\' => {
                    if let Some(escaped) = self.chars.next() {
                        self.word.push(escaped);
                    }
                }
                _ => self.word.push(next),
            }
        }
    }

    /// A comment runs to the end of its line, which ends the command.
    fn comment(&mut self) {
        for next in self.chars.by_ref() {
            if next == '\n' {
                break;
            }
        }
        self.end_word();
        self.out.push(std::mem::take(&mut self.command));
    }

    /// `;`, `&`, `|`, a newline or a parenthesis ends the command (`&>` is a redirection); after a pipe, the next
    /// command's standard input is the pipe.
    fn separator(&mut self, c: char) {
        self.end_word();
        let piped = c == '|' && self.chars.peek() != Some(&'|');
        if c == '&' && self.chars.peek() == Some(&'>') {
            // `&>file`: a redirection of stdout and stderr, not a separator.
            self.chars.next();
            self.skip_next = true;
            return;
        }
        if matches!((c, self.chars.peek()), ('&', Some('&')) | ('|', Some('|' | '&'))) {
            self.chars.next();
        }
        self.out.push(std::mem::take(&mut self.command));
        self.command.stdin_redirected = piped;
    }

    /// `<` or `>`: the next word is the target; an input redirection of descriptor 0 means the command does not
    /// read the terminal.
    fn redirect(&mut self, c: char) {
        // A word of digits right before is the descriptor (`2>`, `0<`).
        let fd_word = self.in_word && !self.word.is_empty() && self.word.bytes().all(|b| b.is_ascii_digit());
        let fd = if fd_word {
            std::mem::take(&mut self.word)
        } else {
            String::new()
        };
        if fd_word {
            self.in_word = false;
        } else {
            self.end_word();
        }
        if c == '<' && (fd.is_empty() || fd == "0") {
            self.command.stdin_redirected = true;
        }
        while matches!(self.chars.peek(), Some('<' | '>' | '&' | '|')) {
            self.chars.next();
        }
        self.skip_next = true;
    }
}

const SHELLS: &[&str] = &[
    "sh", "bash", "zsh", "dash", "ksh", "mksh", "fish", "tcsh", "csh", "nu", "elvish", "xonsh", "pwsh", "ash",
];

/// Programs that always read command lines from the terminal, whatever their arguments.
const ALWAYS: &[&str] = &[
    "irb", "pry", "ghci", "iex", "erl", "utop", "tmux", "screen", "telnet", "ftp", "gdb", "lldb", "jshell", "ed", "bc",
    "dc", "mongosh", "mongo", "swipl", "tclsh", "wish", "sbcl", "racket", "guile", "ocaml",
];

/// A program that reads command lines from the terminal unless told otherwise.
struct Interpreter {
    name: &'static str,
    /// Options that give an inline program, a file or a command to run: with one, it does not read the terminal.
    program: &'static [&'static str],
    /// Options that take the next word as their value.
    valued: &'static [&'static str],
    /// Options that force a REPL whatever else is given.
    forced: &'static [&'static str],
    /// Operands allowed before one names a script or a command (0 for interpreters, whose first operand is a script;
    /// 1 for sqlite3, whose second is SQL; unbounded for clients whose operands are a database, a user or a host).
    operands: usize,
}

const fn repl(
    name: &'static str,
    program: &'static [&'static str],
    valued: &'static [&'static str],
    forced: &'static [&'static str],
    operands: usize,
) -> Interpreter {
    Interpreter {
        name,
        program,
        valued,
        forced,
        operands,
    }
}

const INTERPRETERS: &[Interpreter] = &[
    repl("python", &["-c", "-m"], &["-W", "-X", "-Q"], &["-i"], 0),
    repl("pypy", &["-c", "-m"], &["-W", "-X"], &["-i"], 0),
    repl("ipython", &["-c", "-m"], &[], &["-i"], 0),
    repl("bpython", &["-c"], &[], &["-i"], 0),
    repl("ptpython", &[], &[], &["-i"], 0),
    repl(
        "node",
        &["-e", "--eval", "-p", "--print", "--test", "-v", "--version"],
        &["-r", "--require", "--import"],
        &["-i", "--interactive"],
        0,
    ),
    repl(
        "nodejs",
        &["-e", "--eval", "-p", "--print"],
        &["-r", "--require"],
        &["-i", "--interactive"],
        0,
    ),
    repl("deno", &[], &[], &["repl"], 0),
    repl("bun", &["-e", "--eval"], &[], &["repl"], 0),
    repl("ruby", &["-e"], &["-r", "-I"], &[], 0),
    repl("php", &["-r", "-f"], &["-d", "-c"], &["-a"], 0),
    repl("lua", &["-e"], &["-l"], &["-i"], 0),
    repl("luajit", &["-e"], &["-l"], &["-i"], 0),
    repl(
        "julia",
        &["-e", "-E", "--eval", "--print"],
        &["-t", "--threads", "--project"],
        &["-i"],
        0,
    ),
    repl("R", &["-e", "-f", "--file"], &[], &[], 0),
    repl("scala", &["-e"], &[], &[], 0),
    repl(
        "psql",
        &["-c", "--command", "-f", "--file", "-l", "--list"],
        &["-U", "-h", "-p", "-d", "-v", "--set"],
        &[],
        usize::MAX,
    ),
    repl("mysql", &["-e", "--execute"], &["-u", "-h", "-P"], &[], usize::MAX),
    repl("mariadb", &["-e", "--execute"], &["-u", "-h", "-P"], &[], usize::MAX),
    repl("sqlite3", &[], &["-cmd", "-separator"], &[], 1),
    repl("redis-cli", &[], &["-h", "-p", "-a", "-n", "-u"], &[], 0),
    repl("sftp", &["-b"], &["-P", "-i", "-o", "-F"], &[], usize::MAX),
];

/// Wrappers that run the rest of the line as a command, with the options that take a value.
const WRAPPERS: &[(&str, &[&str])] = &[
    (
        "sudo",
        &["-u", "-g", "-C", "-D", "-h", "-p", "-r", "-t", "-U", "-T", "-R"],
    ),
    ("doas", &["-u", "-C"]),
    ("env", &["-u", "-C", "-S"]),
    ("exec", &["-a"]),
    ("nohup", &[]),
    ("time", &["-f", "-o"]),
    ("command", &[]),
    ("builtin", &[]),
    ("nice", &["-n"]),
    ("ionice", &["-c", "-n", "-p"]),
    ("stdbuf", &["-i", "-o", "-e"]),
    ("chrt", &[]),
    ("taskset", &[]),
    ("unbuffer", &[]),
    ("then", &[]),
    ("do", &[]),
    ("else", &[]),
    ("if", &[]),
    ("while", &[]),
    ("until", &[]),
    ("!", &[]),
    ("{", &[]),
];

fn starts_repl(words: &[String]) -> bool {
    let mut rest = words;
    // Assignments before the program (`FOO=1 python3`).
    while rest.first().is_some_and(|w| is_assignment(w)) {
        rest = &rest[1..];
    }
    let Some(program) = rest.first() else {
        return false;
    };
    let name = program.rsplit('/').next().unwrap_or(program);
    let args = &rest[1..];
    if let Some((_, valued)) = WRAPPERS.iter().find(|(w, _)| *w == name) {
        return wrapper(name, valued, args);
    }
    if name == "timeout" || name == "chroot" {
        // `timeout [opts] DURATION cmd`, `chroot [opts] DIR cmd`.
        let operands: Vec<&String> = args.iter().skip_while(|a| a.starts_with('-')).collect();
        return operands.len() > 1 && starts_repl(&args[args.len() - operands.len() + 1..]);
    }
    if SHELLS.contains(&name) {
        return shell(args);
    }
    if ALWAYS.contains(&name) {
        return true;
    }
    match name {
        "su" => return !args.iter().any(|a| a == "-c" || a.starts_with("--command")),
        "ssh" => return ssh(args),
        "script" => return !args.iter().any(|a| a == "-c" || a.starts_with("--command")),
        "docker" | "podman" | "kubectl" | "nerdctl" => return container(args),
        _ => {}
    }
    let base = name.trim_end_matches(|c: char| c.is_ascii_digit() || c == '.');
    INTERPRETERS
        .iter()
        .find(|i| i.name == base || i.name == name)
        .is_some_and(|i| interpreter(i, args))
}

fn is_assignment(word: &str) -> bool {
    word.split_once('=')
        .is_some_and(|(name, _)| !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
}

fn wrapper(name: &str, valued: &[&str], args: &[String]) -> bool {
    let mut i = 0;
    while let Some(arg) = args.get(i) {
        if name == "sudo" && (arg == "-i" || arg == "-s" || arg == "--login" || arg == "--shell") {
            // `sudo -i` / `sudo -s` alone start a shell; with a command they run it through one.
            return args
                .get(i + 1..)
                .is_none_or(|rest| rest.iter().all(|a| a.starts_with('-')))
                || starts_repl(&args[i + 1..]);
        }
        if name == "env" && is_assignment(arg) {
            i += 1;
            continue;
        }
        if arg == "--" {
            i += 1;
            break;
        }
        if !arg.starts_with('-') || arg == "-" {
            break;
        }
        i += if valued.contains(&arg.as_str()) { 2 } else { 1 };
    }
    starts_repl(&args[i.min(args.len())..])
}

fn shell(args: &[String]) -> bool {
    let mut i = 0;
    let mut interactive = false;
    while let Some(arg) = args.get(i) {
        match arg.as_str() {
            "-c" => return interactive,
            "-i" | "-s" => interactive = true,
            "-o" | "+o" | "-O" | "+O" | "--rcfile" | "--init-file" => i += 1,
            "--" => return interactive || args.get(i + 1).is_none(),
            a if a.starts_with('-') || a.starts_with('+') => {
                if a.len() > 1 && !a.starts_with("--") && a.contains('c') {
                    return interactive;
                }
                if a.contains('i') && !a.starts_with("--") {
                    interactive = true;
                }
            }
            // A script operand.
            _ => return interactive,
        }
        i += 1;
    }
    true
}

fn interpreter(repl: &Interpreter, args: &[String]) -> bool {
    if args.iter().any(|a| repl.forced.contains(&a.as_str())) {
        return true;
    }
    let mut operands = 0;
    let mut i = 0;
    while let Some(arg) = args.get(i) {
        let flag = arg.split_once('=').map_or(arg.as_str(), |(f, _)| f);
        // `-c'code'` and `-mmodule` glue the value to a short option.
        let glued = repl
            .program
            .iter()
            .any(|p| p.len() == 2 && !arg.starts_with("--") && arg.starts_with(p));
        if repl.program.contains(&flag) || glued {
            return false;
        }
        if arg.starts_with('-') && arg != "-" {
            i += if repl.valued.contains(&flag) && !arg.contains('=') {
                2
            } else {
                1
            };
            continue;
        }
        operands += 1;
        if operands > repl.operands {
            return false;
        }
        i += 1;
    }
    true
}

fn ssh(args: &[String]) -> bool {
    const VALUED: &str = "BbcDEeFIiJLlmOopQRSWw";
    let mut i = 0;
    while let Some(arg) = args.get(i) {
        if let Some(flags) = arg.strip_prefix('-') {
            let takes_value = flags.len() == 1 && flags.chars().all(|c| VALUED.contains(c));
            i += if takes_value { 2 } else { 1 };
            continue;
        }
        // The destination; anything after it is a remote command.
        return args.len() == i + 1;
    }
    false
}

fn container(args: &[String]) -> bool {
    let interactive = args.iter().any(|a| {
        a == "-i"
            || a == "--interactive"
            || (a.starts_with('-') && !a.starts_with("--") && a.contains('i') && a.contains('t'))
    });
    if !interactive || !args.iter().any(|a| a == "exec" || a == "run" || a == "attach") {
        return false;
    }
    if args.iter().any(|a| a == "attach") {
        return true;
    }
    // The command is at the end; any of the remaining words that starts a shell or a REPL counts.
    (1..args.len()).any(|i| !args[i].starts_with('-') && starts_repl(&args[i..]) && !args[i - 1].starts_with('-'))
}

#[cfg(test)]
#[path = "nested_tests.rs"]
mod tests;
