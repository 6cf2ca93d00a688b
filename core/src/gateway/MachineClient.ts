/**
 * Port: talking to a machine, an OpenAI-compatible HTTP server at the catalogue's `base_url`
 * (e.g. http://127.0.0.1:8101/v1). The gateway posts calls through it and streams the answers
 * back; the health checker lists the models a machine serves now (GET {base_url}/models).
 *
 * A failure before the machine's first byte of an answer is a MachineFailure (the router may try
 * the next machine); an HTTP error status is not a failure here: it is a MachineResponse the
 * gateway classifies. A failure while the body streams ends the body stream with MachineFailure.
 */
import { Context, type Effect, Schema, type Stream } from "effect"

export interface MachineTarget {
  readonly id: string
  readonly base_url: string
}

export class MachineFailure extends Schema.TaggedError<MachineFailure>()("MachineFailure", {
  machine_id: Schema.String,
  /**
   * unreachable: no connection; timeout: no first byte in time; dropped: the body stream broke;
   * unsendable: the body could not be encoded as JSON, so nothing was sent (the caller's fault).
   */
  reason: Schema.Literals(["unreachable", "timeout", "dropped", "unsendable"]),
  message: Schema.String
}) {}

export interface MachineResponse {
  readonly status: number
  /** Lower-case header names. */
  readonly headers: Readonly<Record<string, string>>
  /** The body as it arrives, chunk by chunk; consuming it is the caller's job. */
  readonly body: Stream.Stream<Uint8Array, MachineFailure>
  /**
   * Optional: the whole body at once, for a client that reads it cheaper so than as a stream
   * (the gateway reads a non-streamed answer whole: docs/performance.md "The answer read whole").
   * Fails as `body` would; interrupting it aborts the request. A caller uses this or `body`, not both.
   */
  readonly bytes?: Effect.Effect<Uint8Array, MachineFailure>
}

export interface PostOptions {
  /** Time allowed until the response head arrives. */
  readonly firstByteTimeoutMs: number
  /** Headers sent besides the client's own (`traceparent`: http/observe/Tracing.ts). */
  readonly headers?: Readonly<Record<string, string>> | undefined
}

export class MachineClient extends Context.Service<MachineClient, {
  /** POST {base_url}{path} with a JSON body, e.g. path "/chat/completions". Interrupting aborts the call. */
  readonly post: (
    machine: MachineTarget,
    path: string,
    body: unknown,
    options: PostOptions
  ) => Effect.Effect<MachineResponse, MachineFailure>
  /** GET {base_url}/models: the ids of the models the machine serves now. */
  readonly models: (machine: MachineTarget, timeoutMs: number) => Effect.Effect<ReadonlyArray<string>, MachineFailure>
}>()("@model-platform/core/gateway/MachineClient") {}
