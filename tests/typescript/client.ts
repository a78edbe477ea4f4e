// A small phone client written against the types that json-schema-to-typescript makes from
// docs/protocol.schema.json: `tsc --strict` on it fails when the schema stops giving what a client needs.
import type {
  DeviceEnrollParams,
  DeviceProveParams,
  DeviceProveResult,
  Event,
  HelloParams,
  HelloResult,
  PromptSendParams,
  PromptSendResult,
  ConversationSubscribeParams,
  SubscribeItem,
} from "./protocol.js";

/** A request frame of docs/protocol.md. */
interface Request<P> {
  id: number;
  method: string;
  params: P;
}

export function hello(id: number): Request<HelloParams> {
  return { id, method: "hello", params: { protocol: 1, client: { name: "ts-phone", version: "1" } } };
}

export function enroll(id: number, token: string, publicKey: string): Request<DeviceEnrollParams> {
  return { id, method: "device.enroll", params: { token, name: "TS phone", public_key: publicKey } };
}

/** The fields of the proof message that the hello result gives, or null when it gives no challenge. */
export function proveInputs(result: HelloResult): { challenge: string; peerNode: string; tailnet: string } | null {
  if (result.challenge == null || result.prove == null) {
    return null;
  }
  return { challenge: result.challenge, peerNode: result.prove.peer_node, tailnet: result.prove.daemon_tailnet };
}

export function prove(id: number, deviceId: string, signature: string): Request<DeviceProveParams> {
  return { id, method: "device.prove", params: { device_id: deviceId, signature } };
}

export function canApprove(result: DeviceProveResult): boolean {
  return result.scopes.includes("approve");
}

export function prompt(id: number, commandId: string, text: string): Request<PromptSendParams> {
  return { id, method: "prompt.send", params: { command_id: commandId, text } };
}

export function subscribe(id: number, sent: PromptSendResult, afterSeq: number): Request<ConversationSubscribeParams> {
  return { id, method: "conversation.subscribe", params: { conversation_id: sent.conversation_id, after_seq: afterSeq } };
}

/** The assistant's text so far and the last seq seen, after one subscription item. */
export function fold(state: { text: string; lastSeq: number }, item: SubscribeItem): { text: string; lastSeq: number } {
  if (!("event" in item)) {
    return state;
  }
  const event: Event = item.event;
  if (event.seq !== state.lastSeq + 1) {
    throw new Error(`a gap or a repeat: ${state.lastSeq} then ${event.seq}`);
  }
  const text = event.kind === "assistant_message_updated" ? state.text + event.delta : state.text;
  return { text, lastSeq: event.seq };
}

export function turnEnded(event: Event): boolean {
  switch (event.kind) {
    case "turn_completed":
    case "turn_failed":
    case "turn_interrupted":
    case "turn_cancelled":
      return true;
    default:
      return false;
  }
}
