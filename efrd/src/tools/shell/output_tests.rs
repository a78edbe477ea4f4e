use super::*;

fn window_with(text: &str, head: usize, tail: usize) -> RunOutput {
    let mut window = OutputWindow::new(head, tail);
    for c in text.chars() {
        match c {
            '\n' => window.newline(),
            '\r' => window.carriage_return(),
            '\x08' => window.backspace(),
            c => window.push_char(c),
        }
    }
    window.snapshot()
}

#[test]
fn small_output_comes_back_whole() {
    let out = window_with("a\nb\nno end", 1024, 1024);
    assert_eq!(out.for_client(), "a\nb\nno end");
    assert_eq!((out.total_bytes, out.total_lines), (10, 3));
    assert!(!out.is_truncated());
    assert_eq!(out.for_model(OutputLimits::MODEL), "a\nb\nno end");
}

#[test]
fn carriage_return_redraws_the_line_and_backspace_erases() {
    let out = window_with("10%\r50%\r100%\r\ndone\r\nab\x08c\n", 1024, 1024);
    assert_eq!(out.for_client(), "100%\ndone\nac\n");
}

#[test]
fn the_window_keeps_head_and_tail_and_counts_the_middle() {
    let text: String = (0..1000).map(|i| format!("line {i}\n")).collect();
    let out = window_with(&text, 100, 100);
    assert!(out.is_truncated());
    assert_eq!(out.total_lines, 1000);
    assert_eq!(out.total_bytes, text.len() as u64);
    let client = out.for_client();
    assert!(client.starts_with("line 0\nline 1\n"), "{client}");
    assert!(client.ends_with("line 998\nline 999\n"), "{client}");
    // Everything not shown is counted in the elision line.
    let shown_lines = client.lines().count() as u64 - 1;
    let marker = client
        .lines()
        .find(|l| l.starts_with("[... "))
        .unwrap_or_default()
        .to_owned();
    let shown_bytes = client.len() - marker.len() - 1;
    assert_eq!(
        marker,
        format!(
            "[... {} lines ({} bytes) elided ...]",
            1000 - shown_lines,
            text.len() - shown_bytes
        )
    );
}

#[test]
fn model_bounds_apply_on_top_of_the_capture() {
    let text: String = (0..100).map(|i| format!("{i:03}\n")).collect();
    let out = RunOutput::from_text(&text);
    let limits = OutputLimits {
        head_bytes: 1000,
        head_lines: 2,
        tail_bytes: 1000,
        tail_lines: 3,
    };
    assert_eq!(
        out.for_model(limits),
        "000\n001\n[... 95 lines (380 bytes) elided ...]\n097\n098\n099\n"
    );
    let limits = OutputLimits {
        head_bytes: 9,
        head_lines: 100,
        tail_bytes: 4,
        tail_lines: 100,
    };
    assert_eq!(
        out.for_model(limits),
        "000\n001\n[... 97 lines (388 bytes) elided ...]\n099\n"
    );
}

#[test]
fn a_long_single_line_is_cut_at_char_boundaries() {
    let out = RunOutput::from_text(&"é".repeat(100));
    let limits = OutputLimits {
        head_bytes: 5,
        head_lines: 10,
        tail_bytes: 3,
        tail_lines: 10,
    };
    let bounded = out.for_model(limits);
    assert_eq!(bounded, "éé\n[... 0 lines (194 bytes) elided ...]\né");
}

#[test]
fn an_endless_line_stays_bounded() {
    let mut window = OutputWindow::for_client();
    for _ in 0..(MAX_LINE_BYTES * 4) {
        window.push_char('x');
    }
    window.newline();
    let out = window.snapshot();
    let text = out.for_client();
    assert!(text.len() < MAX_LINE_BYTES + 100);
    assert!(
        text.ends_with(&format!(" [... {} more bytes in this line]\n", MAX_LINE_BYTES * 3)),
        "{text:.100}"
    );
    assert_eq!(out.total_lines, 1);
}

#[test]
fn the_tail_holds_unicode_whole() {
    let text: String = (0..500).map(|i| format!("größe 🙂 {i}\n")).collect();
    let out = window_with(&text, 64, 64);
    let client = out.for_client();
    assert!(client.ends_with("größe 🙂 499\n"));
    assert!(client.contains("größe 🙂 0\n"));
}
