#!/usr/bin/env python3
"""The reference phone client of efr's remote protocol (docs/remote.md, docs/protocol.md).

Pairs from an `efr://pair` URL (device.enroll with a new P-256 key), proves on a new connection (device.prove over
the length-prefixed message of docs/remote.md), sends a prompt, follows its turn with conversation.subscribe from
after_seq 0 to its end, and prints one JSON object of what it saw: device_id, scopes, conversation_id, seqs, kinds
and the assistant's text.

Usage: phone.py URL PROMPT [SOURCE_ADDRESS]
"""

import asyncio
import base64
import json
import struct
import sys
import urllib.parse
import uuid

import websockets
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec

PROVE_DOMAIN_TAG = "efr-device-prove-v1"
TURN_ENDS = {"turn_completed", "turn_failed", "turn_interrupted", "turn_cancelled"}
HELLO = {"protocol": 1, "client": {"name": "efr-phone-reference", "version": "1"}}
TIMEOUT = 30


def prove_message(challenge, daemon_id, protocol, device_id, peer_node, daemon_tailnet):
    """Each field as a 4-byte big-endian length and its UTF-8 bytes, in the order of docs/remote.md."""
    message = b""
    for text in (PROVE_DOMAIN_TAG, challenge, daemon_id, str(protocol), device_id, peer_node, daemon_tailnet):
        data = text.encode()
        message += struct.pack(">I", len(data)) + data
    return message


class Connection:
    """One WebSocket to efrd: requests with increasing ids, answers read in order."""

    def __init__(self, ws):
        self.ws = ws
        self.next_id = 1

    async def send(self, method, params):
        request_id = self.next_id
        self.next_id += 1
        await self.ws.send(json.dumps({"id": request_id, "method": method, "params": params}))
        return request_id

    async def frame(self, request_id):
        """The next frame of `request_id`; frames of other requests are skipped."""
        while True:
            frame = json.loads(await asyncio.wait_for(self.ws.recv(), TIMEOUT))
            if frame.get("id") == request_id:
                return frame

    async def call(self, method, params):
        frame = await self.frame(await self.send(method, params))
        if "error" in frame:
            raise RuntimeError(f"{method}: {frame['error']}")
        return frame["item"]


def connect(host, port, source):
    extra = {"local_addr": (source, 0)} if source else {}
    # efrd serves no extension (docs/remote.md): no permessage-deflate offer.
    return websockets.connect(f"ws://{host}:{port}/", open_timeout=TIMEOUT, compression=None, **extra)


async def run(url, prompt, source):
    parts = urllib.parse.urlsplit(url)
    if parts.scheme != "efr" or parts.netloc != "pair":
        raise SystemExit(f"not an efr://pair URL: {parts.scheme}://{parts.netloc}")
    query = {key: values[0] for key, values in urllib.parse.parse_qs(parts.query).items()}
    host, port, daemon_id, protocol = query["h"], int(query["p"]), query["d"], int(query["v"])
    key = ec.generate_private_key(ec.SECP256R1())
    point = key.public_key().public_bytes(serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint)

    async with connect(host, port, source) as ws:
        conn = Connection(ws)
        hello = await conn.call("hello", HELLO)
        if hello.get("daemon_id") != daemon_id:
            raise SystemExit(f"the daemon is {hello.get('daemon_id')}, the QR code names {daemon_id}")
        params = {"token": query["t"], "name": "Reference phone", "public_key": base64.b64encode(point).decode()}
        device_id = (await conn.call("device.enroll", params))["device_id"]

    async with connect(host, port, source) as ws:
        conn = Connection(ws)
        hello = await conn.call("hello", HELLO)
        message = prove_message(
            hello["challenge"], daemon_id, protocol, device_id,
            hello["prove"]["peer_node"], hello["prove"]["daemon_tailnet"],
        )
        signature = key.sign(message, ec.ECDSA(hashes.SHA256()))
        params = {"device_id": device_id, "signature": base64.b64encode(signature).decode()}
        scopes = (await conn.call("device.prove", params))["scopes"]
        sent = await conn.call("prompt.send", {"command_id": str(uuid.uuid4()), "text": prompt})
        conversation = sent["conversation_id"]
        subscription = await conn.send("conversation.subscribe", {"conversation_id": conversation, "after_seq": 0})
        events = []
        while not events or events[-1]["kind"] not in TURN_ENDS:
            frame = await conn.frame(subscription)
            if "error" in frame or "item" not in frame:
                raise RuntimeError(f"the subscription ended: {frame}")
            events.append(frame["item"]["event"])

    text = "".join(e["delta"] for e in events if e["kind"] == "assistant_message_updated")
    print(json.dumps({
        "device_id": device_id,
        "scopes": scopes,
        "conversation_id": conversation,
        "seqs": [e["seq"] for e in events],
        "kinds": [e["kind"] for e in events],
        "text": text,
    }))


if __name__ == "__main__":
    if len(sys.argv) not in (3, 4):
        raise SystemExit(__doc__)
    asyncio.run(run(sys.argv[1], sys.argv[2], sys.argv[3] if len(sys.argv) == 4 else None))
