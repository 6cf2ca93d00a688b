/**
 * The EmailSender port (core/src/kernel/EmailSender.ts) over SMTP, with nodemailer
 * (docs/accounts.md "Outside systems"; SMTP_URL and SMTP_FROM in docs/configuration.md).
 *
 * - One connection per message (no pool): sign-up mail is rare, and a pooled socket would not
 *   survive a Lambda freeze. STARTTLS is used when the server offers it; `smtps://` is TLS from
 *   the first byte.
 * - Failures become the port's two errors by what the server said: a permanent (5xx) refusal of the
 *   recipient at RCPT TO is `EmailRefused`; everything else (no connection, timeouts, 4xx replies,
 *   authentication, a refused sender or DATA) is `EmailUnavailable`, retried later by the caller.
 * - Neither nodemailer (its logger stays off) nor this module logs a message's text or html: they
 *   carry one-time links. A log line names the recipient, the Message-ID and the server's reply.
 *
 * Runtime-neutral: nothing here needs the Node server, only nodemailer (which runs on Lambda's Node
 * runtime too), so the Lambda shell can use this module as it is.
 */
import {
  checkMessage,
  type EmailMessage,
  EmailRefused,
  EmailSender,
  EmailUnavailable
} from "@model-platform/core/kernel"
import { Effect, Layer, Redacted } from "effect"
import nodemailer from "nodemailer"

export interface SmtpSettings {
  readonly host: string
  readonly port: number
  /** TLS from the first byte (smtps://); otherwise STARTTLS when the server offers it. */
  readonly secure: boolean
  readonly user: string | undefined
  readonly pass: Redacted.Redacted<string> | undefined
}

export interface SmtpOptions {
  /** SMTP_URL: `smtp://user:pass@host:port` or `smtps://…`. */
  readonly url: Redacted.Redacted<string>
  /** SMTP_FROM: the From address, e.g. `Model Platform <no-reply@example.com>`. */
  readonly from: string
  /** Milliseconds to wait for the connection, and for the greeting. Default 10 s. */
  readonly connectTimeoutMs?: number
  /** Milliseconds of silence on an open connection before giving up. Default 30 s. */
  readonly socketTimeoutMs?: number
}

/** SMTP_URL is not a usable SMTP address. The message never holds the password. */
export class InvalidSmtpUrl extends Error {
  readonly _tag = "InvalidSmtpUrl"
  constructor(reason: string) {
    super(`SMTP_URL ${reason}; expected smtp://user:pass@host:port or smtps://user:pass@host:port`)
    this.name = "InvalidSmtpUrl"
  }
}

/** The connection settings of an SMTP_URL. Port defaults: 587 for smtp://, 465 for smtps://. */
export const parseSmtpUrl = (url: Redacted.Redacted<string>): SmtpSettings | InvalidSmtpUrl => {
  if (!URL.canParse(Redacted.value(url))) return new InvalidSmtpUrl("is not a URL")
  const parsed = new URL(Redacted.value(url))
  if (parsed.protocol !== "smtp:" && parsed.protocol !== "smtps:") {
    return new InvalidSmtpUrl(`has the scheme ${parsed.protocol.replace(/:$/, "")}`)
  }
  if (parsed.hostname === "") return new InvalidSmtpUrl("names no host")
  const secure = parsed.protocol === "smtps:"
  const user = percentDecode(parsed.username)
  const pass = percentDecode(parsed.password)
  if (user === null || pass === null) return new InvalidSmtpUrl("holds a malformed %-escape in its user or password")
  return {
    // IPv6 literals come bracketed from URL; sockets want them bare.
    host: parsed.hostname.replace(/^\[(.*)\]$/, "$1"),
    port: parsed.port === "" ? (secure ? 465 : 587) : Number(parsed.port),
    secure,
    user: user === "" ? undefined : user,
    pass: pass === "" ? undefined : Redacted.make(pass)
  }
}

/** decodeURIComponent, or null for a malformed escape (which it would throw on). */
const percentDecode = (text: string): string | null => {
  try {
    return decodeURIComponent(text)
  } catch {
    return null
  }
}

/** The fields of a nodemailer error this module reads. */
interface SmtpFailure {
  readonly code?: string
  readonly command?: string
  readonly responseCode?: number
  readonly response?: string
  readonly message?: string
}

/** Which of the port's errors a nodemailer failure is. */
export const classifySmtpFailure = (to: string, error: unknown): EmailRefused | EmailUnavailable => {
  const failure: SmtpFailure = typeof error === "object" && error !== null ? error : {}
  const reply = failure.response ?? failure.message ?? String(error)
  if (failure.command === "RCPT TO" && failure.responseCode !== undefined && failure.responseCode >= 500) {
    return new EmailRefused({ to, reason: reply })
  }
  const code = failure.code === undefined ? "" : `${failure.code}: `
  return new EmailUnavailable({ reason: `${code}${failure.command === undefined ? "" : `${failure.command}: `}${reply}` })
}

/** The SMTP sender; the layer fails at build when SMTP_URL is not usable. */
export const SmtpEmailSender = (options: SmtpOptions): Layer.Layer<EmailSender, InvalidSmtpUrl> =>
  Layer.effect(
    EmailSender,
    Effect.gen(function*() {
      const settings = parseSmtpUrl(options.url)
      if (settings instanceof InvalidSmtpUrl) return yield* Effect.fail(settings)
      const connectTimeout = options.connectTimeoutMs ?? 10_000
      const transporter = yield* Effect.acquireRelease(
        Effect.sync(() =>
          nodemailer.createTransport({
            host: settings.host,
            port: settings.port,
            secure: settings.secure,
            ...(settings.user === undefined
              ? {}
              : { auth: { user: settings.user, pass: settings.pass === undefined ? "" : Redacted.value(settings.pass) } }),
            connectionTimeout: connectTimeout,
            greetingTimeout: connectTimeout,
            socketTimeout: options.socketTimeoutMs ?? 30_000,
            logger: false,
            debug: false
          })
        ),
        (transporter) => Effect.sync(() => transporter.close())
      )
      const send = Effect.fn("SmtpEmailSender.send")(function*(input: EmailMessage) {
        const message = yield* checkMessage(input)
        const info = yield* Effect.tryPromise({
          try: () =>
            transporter.sendMail({
              from: options.from,
              to: message.to,
              subject: message.subject,
              text: message.text,
              ...(message.html === undefined ? {} : { html: message.html })
            }),
          catch: (error) => classifySmtpFailure(message.to, error)
        }).pipe(
          Effect.tapError((error) =>
            Effect.logWarning("email not sent").pipe(
              Effect.annotateLogs({ transport: "smtp", to: message.to, error: error._tag, reason: error.reason })
            )
          )
        )
        // One recipient: accepted, or the send failed above. A server that accepts the envelope but
        // lists the recipient as rejected is a refusal all the same.
        if (info.rejected.length > 0 && info.accepted.length === 0) {
          return yield* new EmailRefused({ to: message.to, reason: info.response })
        }
        yield* Effect.logInfo("email sent").pipe(
          Effect.annotateLogs({ transport: "smtp", to: message.to, message_id: info.messageId, reply: info.response })
        )
        return { id: info.messageId }
      })
      return EmailSender.of({ transport: "smtp", send })
    })
  )
