//! `efr device add [--name N]`, `efr device list`, `efr device revoke ID` (docs/remote.md).
//!
//! `add` calls device.pair_start and shows its QR code in half-block characters with the `efr://pair` URL under it.
//! When the phone enrolls, it shows the phone's facts (name, node, user, OS, key fingerprint) and asks y/n; the
//! answer goes to device.pair_confirm. Leaving (Ctrl-C) closes the connection, which ends the pairing.
//!
//! ```text
//! ID                                    NAME         FINGERPRINT              NODE               LAST SEEN
//! 5e1f0c2a-8b3d-4f6e-a7b8-c9d0e1f2a3b4  Ada's phone  SHA256:0ed3a6ab957ff6f5  nKq3wPhone11CNTRL  2026-12-02 04:10
//! ```

use std::io::BufRead as _;
use std::process::ExitCode;

use efr_protocol::frame::ServerFrame;
use efr_protocol::wire::{DeviceListResult, DevicePairConfirmResult, DeviceRevokeResult, PairEnd, PairStartItem};
use qrcode::QrCode;
use qrcode::render::unicode::Dense1x2;
use serde_json::json;

use super::{read, run_unary};
use crate::cli::DeviceCommand;
use crate::report;

/// Runs one `efr device` command.
pub async fn run(command: DeviceCommand) -> ExitCode {
    match command {
        DeviceCommand::Add { name } => add(name).await,
        DeviceCommand::List(args) => {
            run_unary("device.list", json!({}), args.json, None, |value| {
                let result: DeviceListResult = read("device.list", value)?;
                crate::out::println(&render_list(&result));
                Ok(())
            })
            .await
        }
        DeviceCommand::Revoke { id, json } => {
            run_unary("device.revoke", json!({"device_id": id}), json, None, |value| {
                let result: DeviceRevokeResult = read("device.revoke", value)?;
                crate::out::println(&format!("revoked {id} at {}", result.revoked_at));
                Ok(())
            })
            .await
        }
    }
}

/// The QR code of `text` in half blocks (two rows of modules per line), dark on light, with its quiet zone.
///
/// # Errors
/// When the text is too long for a QR code.
pub fn qr_text(text: &str) -> Result<String, String> {
    let code = QrCode::new(text.as_bytes()).map_err(|e| format!("cannot make the QR code: {e}"))?;
    Ok(code
        .render::<Dense1x2>()
        .dark_color(Dense1x2::Light)
        .light_color(Dense1x2::Dark)
        .quiet_zone(true)
        .build())
}

/// The table of `efr device list`.
#[must_use]
pub fn render_list(result: &DeviceListResult) -> String {
    if result.devices.is_empty() {
        return "no device is paired: `efr device add` pairs a phone".to_owned();
    }
    let mut out = format!(
        "{:<36}  {:<16}  {:<23}  {:<18}  {}\n",
        "ID", "NAME", "FINGERPRINT", "NODE", "STATE"
    );
    for device in &result.devices {
        let state = match (&device.revoked_at, &device.last_seen_at) {
            (Some(at), _) => format!("revoked {at}"),
            (None, Some(at)) => format!("last seen {at}"),
            (None, None) => "never connected".to_owned(),
        };
        out.push_str(&format!(
            "{:<36}  {:<16}  {:<23}  {:<18}  {state}\n",
            device.device_id.to_string(),
            device.name,
            device.key_fingerprint,
            device.node
        ));
    }
    out.trim_end().to_owned()
}

/// Asks y/n on stdin; anything but y or yes is no.
async fn ask_yes() -> bool {
    crate::out::print("Pair this phone? [y/N] ");
    let line = tokio::task::spawn_blocking(|| {
        let mut line = String::new();
        std::io::stdin().lock().read_line(&mut line).map(|_| line)
    })
    .await;
    matches!(line, Ok(Ok(line)) if matches!(line.trim().to_ascii_lowercase().as_str(), "y" | "yes"))
}

async fn add(name: Option<String>) -> ExitCode {
    let client = match report::connect(None).await {
        Ok(client) => client,
        Err(code) => return code,
    };
    let mut stream = match client.stream("device.pair_start", &json!({"name": name}), false).await {
        Ok(stream) => stream,
        Err(error) => return report::failure(&error),
    };
    while let Some(frame) = stream.next().await {
        let item = match frame {
            ServerFrame::Item { item, .. } => item,
            ServerFrame::End { .. } => return ExitCode::SUCCESS,
            ServerFrame::Error { error, .. } => {
                report::error(&error.message);
                return ExitCode::from(report::FAILED);
            }
            _ => continue,
        };
        let item: PairStartItem = match read("device.pair_start", &item) {
            Ok(item) => item,
            Err(message) => {
                report::error(&message);
                return ExitCode::from(report::FAILED);
            }
        };
        match item {
            PairStartItem::Started { qr, expires_at, .. } => match qr_text(qr.expose()) {
                Ok(code) => {
                    crate::out::println(&code);
                    crate::out::println(qr.expose());
                    crate::out::println(&format!(
                        "Scan the code with the efr app on your phone (good until {expires_at})."
                    ));
                }
                Err(message) => {
                    report::error(&message);
                    return ExitCode::from(report::FAILED);
                }
            },
            PairStartItem::Pending {
                pairing_id,
                device_name,
                node_name,
                user_login,
                key_fingerprint,
                os,
            } => {
                crate::out::println(&format!(
                    "A phone enrolled:\n  name         {device_name}\n  node         {node_name}\n  user         \
                     {user_login}\n  os           {}\n  fingerprint  {key_fingerprint}\nCheck that the phone shows \
                     the same fingerprint.",
                    os.as_deref().unwrap_or("unknown")
                ));
                let accept = ask_yes().await;
                let params = json!({"pairing_id": pairing_id, "accept": accept});
                match client
                    .call::<_, DevicePairConfirmResult>("device.pair_confirm", &params)
                    .await
                {
                    Ok(_) => {}
                    Err(error) => return report::failure(&error),
                }
            }
            PairStartItem::Paired { device_id, .. } => {
                crate::out::println(&format!("paired: device {device_id}"));
                return ExitCode::SUCCESS;
            }
            PairStartItem::Ended { reason, .. } => {
                let why = match reason {
                    PairEnd::Refused => "you said no",
                    PairEnd::Expired => "the code expired, or the phone gave up",
                    PairEnd::Attempts => "too many wrong tokens",
                    PairEnd::Unknown => "efrd ended it",
                };
                report::error(&format!("no device paired: {why}"));
                return ExitCode::from(report::FAILED);
            }
            PairStartItem::Unknown => {}
        }
    }
    report::error("efrd closed the connection");
    ExitCode::from(report::FAILED)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_qr_code_is_half_blocks_two_rows_a_line() {
        let url = "efr://pair?v=1&d=d1a5e5f0-2c3b-4e8d-9f10-223344556677&h=100.101.102.103&p=8765&t=abc";
        let text = qr_text(url).unwrap();
        let code = QrCode::new(url.as_bytes()).unwrap();
        // The modules and a quiet zone of 4 on each side, two rows of modules per line.
        let side = code.width() + 8;
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), side.div_ceil(2));
        assert!(lines.iter().all(|line| line.chars().count() == side));
        assert!(
            text.chars().all(|c| matches!(c, ' ' | '▀' | '▄' | '█' | '\n')),
            "{text}"
        );
    }
}
