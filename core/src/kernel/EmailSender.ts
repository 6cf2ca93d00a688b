/**
 * Port: sending one email message (docs/accounts.md "Outside systems"). The account service sends
 * through it the one-time links of sign-up, address confirmation and recovery.
 *
 * A send either hands the message over (`SentEmail`) or fails with one of two typed errors, which
 * tell the caller what to say:
 * - `EmailRefused`: this recipient address is refused for good (malformed here, or refused with a
 *   permanent 5xx reply to RCPT TO by the server). Sending again will not help; ask for another
 *   address.
 * - `EmailUnavailable`: the message could not be handed over now (server unreachable, timed out,
 *   a temporary 4xx reply, authentication or sender rejected, the outbox not writable). The address
 *   may be fine: "try again later". The operator finds the cause in `reason` (and in the log).
 *
 * Implementations: SMTP (adapters/node-http/src/SmtpEmailSender.ts), a file outbox for when no SMTP
 * server is configured (adapters/node-http/src/OutboxEmailSender.ts), and a memory outbox for tests
 * (adapters/test-harness/src/MemoryOutbox.ts). Every one checks the address with `checkMessage`
 * first, so a malformed address is refused the same way everywhere, before anything is sent.
 *
 * Messages carry one-time links: no implementation logs a message's text or html.
 */
import { Context, Effect, Schema } from "effect"

export interface EmailMessage {
  /** One recipient address, `local@domain`. */
  readonly to: string
  readonly subject: string
  /** The plain-text body; always sent. */
  readonly text: string
  /** An HTML alternative of the same content. */
  readonly html?: string | undefined
}

/** What a successful send reports: the message's id where the transport gives one. */
export interface SentEmail {
  /** The SMTP Message-ID, or the outbox's name for the message. */
  readonly id: string
}

/** The recipient address is refused for good: do not retry with it. */
export class EmailRefused extends Schema.TaggedError<EmailRefused>()("EmailRefused", {
  to: Schema.String,
  /** Why (the server's reply, or what is wrong with the address); safe to log, holds no body. */
  reason: Schema.String
}) {}

/** The message could not be handed over now: retry later. */
export class EmailUnavailable extends Schema.TaggedError<EmailUnavailable>()("EmailUnavailable", {
  /** Why, for the operator; holds no body. */
  reason: Schema.String
}) {}

export type EmailError = EmailRefused | EmailUnavailable

export class EmailSender extends Context.Service<EmailSender, {
  /** Which implementation this is: "smtp", "outbox" or "memory" (for logs and docs). */
  readonly transport: string
  readonly send: (message: EmailMessage) => Effect.Effect<SentEmail, EmailError>
}>()("@model-platform/core/kernel/EmailSender") {}

// One address, `local@domain`: no display name, no list, no whitespace or control characters, none
// of the characters that would make it something else in a header (<>,;:"()[]\).
const LOCAL = /^[^\s\p{Cc}@<>,;:"()[\]\\]{1,64}$/u
const DOMAIN_LABEL = /^(?!-)[\p{L}\p{N}-]{1,63}(?<!-)$/u

/** Why `address` is not one deliverable address, or undefined when it is. */
export const addressProblem = (address: string): string | undefined => {
  if (address.length > 254) return "the address is longer than 254 characters"
  const at = address.lastIndexOf("@")
  if (at <= 0 || at === address.length - 1) return "the address is not of the form name@domain"
  const local = address.slice(0, at)
  const domain = address.slice(at + 1)
  if (!LOCAL.test(local)) return "the part before @ holds characters an address cannot hold"
  if (!domain.split(".").every((label) => DOMAIN_LABEL.test(label))) return "the domain is not a host name"
  return undefined
}

/**
 * The message as every implementation sends it, or EmailRefused when its address is malformed.
 * A subject is one header line: line breaks in it become spaces.
 */
export const checkMessage = (message: EmailMessage): Effect.Effect<EmailMessage, EmailRefused> => {
  const problem = addressProblem(message.to)
  if (problem !== undefined) return Effect.fail(new EmailRefused({ to: message.to, reason: problem }))
  return Effect.succeed({ ...message, subject: message.subject.replace(/[\r\n]+/g, " ") })
}
