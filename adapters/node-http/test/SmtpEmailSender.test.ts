/**
 * The SMTP email sender (src/SmtpEmailSender.ts) against a real SMTP server started here
 * (smtp-server on a free port of 127.0.0.1, each mail parsed with mailparser): the message arrives
 * with its From, To, subject, text and html, after authenticating with the URL's (percent-encoded)
 * credentials; a recipient refused for good is EmailRefused; a temporary refusal, wrong
 * credentials, and a server that is down are EmailUnavailable; no log line holds the body.
 */
import { assert, describe, it } from "@effect/vitest"
import { EmailRefused, EmailSender, EmailUnavailable } from "@model-platform/core/kernel"
import { Effect, Layer, Logger, Redacted } from "effect"
import { type ParsedMail, simpleParser } from "mailparser"
import * as Net from "node:net"
import { SMTPServer } from "smtp-server"
import { classifySmtpFailure, InvalidSmtpUrl, parseSmtpUrl, SmtpEmailSender } from "../src/SmtpEmailSender.ts"

interface Received {
  readonly envelope: { readonly from: string; readonly to: ReadonlyArray<string> }
  readonly user: string | undefined
  readonly mail: ParsedMail
}

const USER = "platform"
const PASSWORD = "p@ss:w/rd"

/** An SMTP error with a reply code, as smtp-server sends it. */
const reply = (code: number, message: string) => Object.assign(new Error(message), { responseCode: code })

/**
 * A local SMTP server needing AUTH (plain text over the loopback: STARTTLS off, insecure auth on).
 * Recipients `nobody@…` are refused for good (550), `busy@…` for now (450).
 */
const smtpServer = Effect.acquireRelease(
  Effect.callback<{ readonly port: number; readonly received: Array<Received>; readonly server: SMTPServer }>((resume) => {
    const received: Array<Received> = []
    const server = new SMTPServer({
      logger: false,
      disabledCommands: ["STARTTLS"],
      allowInsecureAuth: true,
      onAuth: (auth, _session, callback) =>
        auth.username === USER && auth.password === PASSWORD
          ? callback(null, { user: USER })
          : callback(reply(535, "5.7.8 authentication failed")),
      onRcptTo: (address, _session, callback) => {
        if (address.address.startsWith("nobody@")) return callback(reply(550, "5.1.1 no such mailbox"))
        if (address.address.startsWith("busy@")) return callback(reply(450, "4.2.1 mailbox busy, try later"))
        callback()
      },
      onData: (stream, session, callback) => {
        simpleParser(stream).then(
          (mail) => {
            received.push({
              envelope: {
                from: session.envelope.mailFrom === false ? "" : session.envelope.mailFrom.address,
                to: session.envelope.rcptTo.map((r) => r.address)
              },
              user: session.user as string | undefined,
              mail
            })
            callback()
          },
          (error: Error) => callback(error)
        )
      }
    })
    server.listen(0, "127.0.0.1", () => {
      const address = server.server.address() as Net.AddressInfo
      resume(Effect.succeed({ port: address.port, received, server }))
    })
  }),
  ({ server }) => Effect.callback<void>((resume) => server.close(() => resume(Effect.void)))
)

/** A port on 127.0.0.1 where nothing listens (taken, then released). */
const closedPort = Effect.callback<number>((resume) => {
  const probe = Net.createServer()
  probe.listen(0, "127.0.0.1", () => {
    const port = (probe.address() as Net.AddressInfo).port
    probe.close(() => resume(Effect.succeed(port)))
  })
})

const url = (port: number, user = USER, password = PASSWORD) =>
  Redacted.make(`smtp://${encodeURIComponent(user)}:${encodeURIComponent(password)}@127.0.0.1:${port}`)

const sender = (port: number, user?: string, password?: string) =>
  SmtpEmailSender({ url: url(port, user, password), from: "Model Platform <no-reply@platform.test>", connectTimeoutMs: 2_000 })

/** Every log line (logfmt, annotations included) written while `effect` runs. */
const capturingLogs = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.gen(function*() {
    const lines: Array<string> = []
    const logger = Logger.map(Logger.formatLogFmt, (line) => {
      lines.push(line)
    })
    const result = yield* effect.pipe(Effect.provide(Logger.layer([logger])))
    return { result, lines }
  })

const LINK = "https://accounts.platform.test/confirm?token=one-time-secret-0123456789"

describe("SmtpEmailSender", () => {
  it.live("delivers one message to a real SMTP server: envelope, headers, text and html arrive; no log line holds the body", () =>
    Effect.gen(function*() {
      const { port, received } = yield* smtpServer
      const { result, lines } = yield* capturingLogs(
        EmailSender.use((email) =>
          email.send({
            to: "ada@example.com",
            subject: "Confirm your address",
            text: `Open this link to confirm: ${LINK}\n`,
            html: `<p>Open <a href="${LINK}">this link</a> to confirm.</p>`
          })
        ).pipe(Effect.provide(sender(port)))
      )
      assert.strictEqual(received.length, 1)
      const [{ envelope, mail, user }] = received as [Received]
      assert.strictEqual(user, USER)
      assert.deepStrictEqual(envelope, { from: "no-reply@platform.test", to: ["ada@example.com"] })
      assert.strictEqual(mail.subject, "Confirm your address")
      assert.deepStrictEqual(mail.from?.value, [{ name: "Model Platform", address: "no-reply@platform.test" }])
      assert.deepStrictEqual(
        (Array.isArray(mail.to) ? mail.to : [mail.to]).flatMap((a) => a?.value.map((v) => v.address) ?? []),
        ["ada@example.com"]
      )
      assert.strictEqual(mail.text?.trim(), `Open this link to confirm: ${LINK}`)
      assert.include(mail.html || "", `href="${LINK}"`)
      assert.strictEqual(result.id, mail.messageId)
      assert.isTrue(lines.some((line) => line.includes("email sent") && line.includes("ada@example.com")))
      for (const line of lines) assert.notInclude(line, "one-time-secret", line)
    }))

  it.live("a recipient refused for good (550 at RCPT TO) is EmailRefused, with the server's reply; nothing is delivered", () =>
    Effect.gen(function*() {
      const { port, received } = yield* smtpServer
      const error = yield* Effect.flip(
        EmailSender.use((email) => email.send({ to: "nobody@example.com", subject: "Hi", text: LINK })).pipe(
          Effect.provide(sender(port))
        )
      )
      assert.instanceOf(error, EmailRefused)
      if (error._tag !== "EmailRefused") return
      assert.strictEqual(error.to, "nobody@example.com")
      assert.include(error.reason, "550")
      assert.include(error.reason, "no such mailbox")
      assert.strictEqual(received.length, 0)
    }))

  it.live("a temporary refusal (450), wrong credentials, and a server that is down are EmailUnavailable", () =>
    Effect.gen(function*() {
      const { port, received } = yield* smtpServer
      const send = (layer: Layer.Layer<EmailSender, InvalidSmtpUrl>, to = "ada@example.com") =>
        Effect.flip(EmailSender.use((email) => email.send({ to, subject: "Hi", text: LINK })).pipe(Effect.provide(layer)))

      const busy = yield* send(sender(port), "busy@example.com")
      assert.instanceOf(busy, EmailUnavailable)
      assert.include(busy.reason, "450")

      const badLogin = yield* send(sender(port, USER, "wrong"))
      assert.instanceOf(badLogin, EmailUnavailable)
      assert.include(badLogin.reason, "EAUTH")

      const down = yield* send(sender(yield* closedPort))
      assert.instanceOf(down, EmailUnavailable)
      assert.match(down.reason, /ECONNECTION|ESOCKET|ECONNREFUSED/)
      assert.strictEqual(received.length, 0)
    }))

  it.live("a malformed address is refused before connecting (no server needed)", () =>
    Effect.gen(function*() {
      const port = yield* closedPort
      for (const to of ["not an address", "a@b.example, c@d.example", "a@b.example\r\nBcc: x@y.example", "<a@b.example>", "a@", "@b"]) {
        const error = yield* Effect.flip(
          EmailSender.use((email) => email.send({ to, subject: "Hi", text: "x" })).pipe(Effect.provide(sender(port)))
        )
        assert.instanceOf(error, EmailRefused, to)
      }
    }))

  it("parses SMTP_URL: scheme, host, port defaults, percent-encoded credentials; refuses what is not SMTP", () => {
    const parsed = parseSmtpUrl(Redacted.make("smtp://us%40er:p%40ss%3Aw@mail.example.com:2525"))
    assert.notInstanceOf(parsed, InvalidSmtpUrl)
    if (parsed instanceof InvalidSmtpUrl) return
    assert.deepInclude(parsed, { host: "mail.example.com", port: 2525, secure: false, user: "us@er" })
    assert.strictEqual(parsed.pass && Redacted.value(parsed.pass), "p@ss:w")
    assert.deepInclude(parseSmtpUrl(Redacted.make("smtp://mail.example.com")), { port: 587, secure: false, user: undefined })
    assert.deepInclude(parseSmtpUrl(Redacted.make("smtps://mail.example.com")), { port: 465, secure: true })
    assert.deepInclude(parseSmtpUrl(Redacted.make("smtp://[::1]:25")), { host: "::1", port: 25 })
    for (const bad of ["mail.example.com", "http://mail.example.com", "smtp://", "smtp://u:%zz@host"]) {
      const result = parseSmtpUrl(Redacted.make(bad))
      assert.instanceOf(result, InvalidSmtpUrl, bad)
      if (result instanceof InvalidSmtpUrl) assert.notInclude(result.message, "%zz")
    }
  })

  it("classifies failures: only a 5xx at RCPT TO is a refusal", () => {
    const rcpt550 = { code: "EENVELOPE", command: "RCPT TO", responseCode: 550, response: "550 no" }
    assert.strictEqual(classifySmtpFailure("a@b.c", rcpt550)._tag, "EmailRefused")
    for (const other of [
      { code: "EENVELOPE", command: "RCPT TO", responseCode: 452, response: "452 full" },
      { code: "EENVELOPE", command: "MAIL FROM", responseCode: 553, response: "553 sender" },
      { code: "EMESSAGE", command: "DATA", responseCode: 554, response: "554 spam" },
      { code: "EAUTH", command: "AUTH PLAIN", responseCode: 535, response: "535 bad" },
      { code: "ETIMEDOUT", message: "Greeting never received" },
      new Error("socket hang up"),
      "weird"
    ]) {
      assert.strictEqual(classifySmtpFailure("a@b.c", other)._tag, "EmailUnavailable")
    }
  })
})
