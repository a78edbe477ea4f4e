use super::*;

#[test]
fn shells_and_repls_are_nested() {
    for line in [
        "bash",
        "/bin/zsh -l",
        "sh -i -c 'echo'",
        "exec bash",
        "sudo -i",
        "sudo -s",
        "sudo -u postgres psql",
        "sudo su -",
        "su",
        "env FOO=1 python3",
        "FOO=1 python3 -q",
        "python3.12",
        "python -i script.py",
        "node",
        "node --interactive",
        "irb",
        "psql mydb",
        "psql -h localhost -U ana mydb",
        "mysql -u root shop",
        "sqlite3 test.db",
        "redis-cli -h localhost",
        "ssh host",
        "ssh -p 2222 -i key ana@host",
        "cd /tmp && bash",
        "make; python3",
        "docker exec -it web bash",
        "podman run --rm -it alpine sh",
        "timeout 60 python3",
        "nohup nice -n 5 zsh",
        "tmux",
        "deno repl",
        "echo 'a | b' ; ghci",
    ] {
        assert!(nested_shell(line), "{line:?} starts a shell or a REPL");
    }
}

#[test]
fn commands_that_do_not_read_command_lines_are_not_nested() {
    for line in [
        "ls -la",
        "bash -c 'echo hi'",
        "bash script.sh",
        "zsh -fc 'print ok'",
        "sh ./configure --prefix=/usr",
        "python3 -c 'input()'",
        "python3 manage.py migrate",
        "python3 -m pytest -q",
        "python -W ignore script.py",
        "node server.js",
        "node -e 'console.log(1)'",
        "psql -c 'select 1' mydb",
        "psql mydb -f schema.sql",
        "mysql -e 'show databases'",
        "sqlite3 test.db 'select 1'",
        "redis-cli get key",
        "ssh host uptime",
        "ssh -t host 'top -n1'",
        "echo 'print(1)' | python3",
        "python3 < script.py",
        "python3 <<< 'print(1)'",
        "cat file | bash",
        "sudo apt-get install -y jq",
        "env FOO=1 make test",
        "grep -r bash .",
        "echo bash",
        "git commit -m 'python3'",
        "docker exec web ls",
        "docker run --rm alpine echo hi",
        "# bash",
        "",
        "   ",
        "su -c 'id' ana",
    ] {
        assert!(!nested_shell(line), "{line:?} does not start a shell or a REPL");
    }
}

#[test]
fn splitting_respects_quotes_and_redirections() {
    let commands = commands("FOO='a; b' cmd \"x|y\" 2>err.log > out; next <in arg & last");
    let words: Vec<Vec<&str>> = commands
        .iter()
        .map(|c| c.words.iter().map(String::as_str).collect())
        .collect();
    assert_eq!(
        words,
        vec![vec!["FOO=a; b", "cmd", "x|y"], vec!["next", "arg"], vec!["last"]]
    );
    let redirected: Vec<bool> = commands.iter().map(|c| c.stdin_redirected).collect();
    assert_eq!(redirected, vec![false, true, false]);
}
