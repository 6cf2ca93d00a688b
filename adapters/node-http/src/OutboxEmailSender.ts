/**
 * The EmailSender port (core/src/kernel/EmailSender.ts) when no SMTP server is configured: a local
 * outbox the operator reads (docs/accounts.md "Outside systems"; OUTBOX_DIR in
 * docs/configuration.md). Whoever runs `./platform start` confirms a sign-up by opening the file.
 *
 * - One file per message, `<UTC time>-<random>.txt` (names sort by time), written aside and renamed
 *   into place, so a reader never sees half a message. Plain text a person can read and copy a link
 *   from (no MIME encoding, which would fold long links): To, From, Subject and Date lines, a blank
 *   line, the text; the html alternative, when there is one, after a marked line.
 * - Files and directory are the owner's only (0600, 0700): the links in them sign a person in.
 * - One log line per message names the file and the recipient, never the body or a link.
 * - A disk that refuses the write is `EmailUnavailable`: the caller says "try again later".
 */
import {
  checkMessage,
  type EmailMessage,
  EmailSender,
  EmailUnavailable,
  randomBytes,
  type SentEmail,
  Time,
  toHex
} from "@model-platform/core/kernel"
import { Effect, Layer } from "effect"
import * as Fs from "node:fs"
import * as Path from "node:path"

export interface OutboxOptions {
  readonly directory: string
  /** The From line written in each file (SMTP_FROM when set). */
  readonly from?: string
}

/** The line that separates the text from the html alternative in an outbox file. */
export const HTML_MARKER = "----- HTML alternative -----"

/** The readable text of one message, as the outbox writes it. */
export const renderOutboxMessage = (message: EmailMessage, from: string, at: Time.Timestamp): string =>
  [
    `To: ${message.to}`,
    `From: ${from}`,
    `Subject: ${message.subject}`,
    `Date: ${at}`,
    "",
    message.text,
    ...(message.html === undefined ? [] : ["", HTML_MARKER, message.html]),
    ""
  ].join("\n")

/** 2026-11-23T20:40:01.123Z -> 20261123T204001123Z: a file name that sorts by time. */
const fileStamp = (at: Time.Timestamp) => at.replace(/[-:.]/g, "")

export const OutboxEmailSender = (options: OutboxOptions): Layer.Layer<EmailSender> =>
  Layer.succeed(EmailSender, {
    transport: "outbox",
    send: Effect.fn("OutboxEmailSender.send")(function*(input: EmailMessage) {
      const message = yield* checkMessage(input)
      const at = yield* Time.now
      const name = `${fileStamp(at)}-${toHex(yield* randomBytes(4))}.txt`
      const file = Path.join(options.directory, name)
      const body = renderOutboxMessage(message, options.from ?? "platform@localhost", at)
      yield* Effect.try({
        try: () => {
          Fs.mkdirSync(options.directory, { recursive: true, mode: 0o700 })
          const aside = `${file}.tmp`
          Fs.writeFileSync(aside, body, { mode: 0o600 })
          Fs.renameSync(aside, file)
        },
        catch: (error) =>
          new EmailUnavailable({
            reason: `the outbox ${options.directory} cannot be written: ${(error as { code?: string }).code ?? String(error)}`
          })
      }).pipe(
        Effect.tapError((error) =>
          Effect.logError("email not written to the outbox").pipe(
            Effect.annotateLogs({ transport: "outbox", to: message.to, reason: error.reason })
          )
        )
      )
      yield* Effect.logInfo(`email for ${message.to} written to the outbox: ${file}`).pipe(
        Effect.annotateLogs({ transport: "outbox", to: message.to, file })
      )
      return { id: name } satisfies SentEmail
    })
  })
