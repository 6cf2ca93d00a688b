/**
 * The file outbox (src/OutboxEmailSender.ts) and the Node server's choice of sender (src/Email.ts):
 * one readable file per message, links unbroken, owner-only, a log line naming the file but not
 * the link; an unwritable outbox is EmailUnavailable; SMTP when SMTP_URL is set, else the outbox.
 */
import { assert, describe, it } from "@effect/vitest"
import { EmailRefused, EmailSender, EmailUnavailable } from "@model-platform/core/kernel"
import { Effect, Exit, Logger, Option, Redacted } from "effect"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { emailSenderLayer, MissingSmtpFrom, outboxDirectory } from "../src/Email.ts"
import { HTML_MARKER, OutboxEmailSender } from "../src/OutboxEmailSender.ts"
import { InvalidSmtpUrl } from "../src/SmtpEmailSender.ts"

const tempDir = Effect.acquireRelease(
  Effect.sync(() => Fs.mkdtempSync(Path.join(Os.tmpdir(), "outbox-test-"))),
  (dir) => Effect.sync(() => Fs.rmSync(dir, { recursive: true, force: true }))
)

/** A link longer than a MIME line (76), which quoted-printable would have folded. */
const LINK = `https://accounts.platform.test/confirm?token=${"s3cr3t".repeat(20)}`

const capturingLogs = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.gen(function*() {
    const lines: Array<string> = []
    const logger = Logger.map(Logger.formatLogFmt, (line) => {
      lines.push(line)
    })
    const result = yield* effect.pipe(Effect.provide(Logger.layer([logger])))
    return { result, lines }
  })

const send = (to: string, html?: string) =>
  EmailSender.use((email) => email.send({ to, subject: "Confirm\r\nyour address", text: `Confirm here:\n${LINK}\n`, html }))

describe("OutboxEmailSender", () => {
  it.live("writes one readable, owner-only file per message; the log line names the file, never the link", () =>
    Effect.gen(function*() {
      const directory = Path.join(yield* tempDir, "outbox")
      const layer = OutboxEmailSender({ directory, from: "no-reply@platform.test" })
      const { result, lines } = yield* capturingLogs(send("ada@example.com").pipe(Effect.provide(layer)))
      const second = yield* send("bob@example.com", `<a href="${LINK}">confirm</a>`).pipe(Effect.provide(layer))

      const files = Fs.readdirSync(directory).sort()
      assert.deepStrictEqual(files, [result.id, second.id].sort())
      assert.match(result.id, /^\d{8}T\d{9}Z-[0-9a-f]{8}\.txt$/)
      const text = Fs.readFileSync(Path.join(directory, result.id), "utf8")
      const [head, body] = text.split("\n\n", 2) as [string, string]
      assert.deepStrictEqual(head.split("\n").slice(0, 3), [
        "To: ada@example.com",
        "From: no-reply@platform.test",
        "Subject: Confirm your address"
      ])
      assert.match(head.split("\n")[3]!, /^Date: \d{4}-\d\d-\d\dT/)
      // The whole link on one line, as sent: the operator copies it from here.
      assert.include(body.split("\n"), LINK)
      assert.notInclude(text, HTML_MARKER)
      const withHtml = Fs.readFileSync(Path.join(directory, second.id), "utf8")
      assert.include(withHtml, `${HTML_MARKER}\n<a href="${LINK}">confirm</a>`)

      assert.strictEqual(Fs.statSync(Path.join(directory, result.id)).mode & 0o777, 0o600)
      assert.strictEqual(Fs.statSync(directory).mode & 0o777, 0o700)

      const logged = lines.filter((line) => line.includes(result.id))
      assert.strictEqual(logged.length, 1)
      assert.include(logged[0]!, Path.join(directory, result.id))
      for (const line of lines) assert.notInclude(line, "s3cr3t")
    }))

  it.live("an outbox that cannot be written is EmailUnavailable; a malformed address is EmailRefused and writes nothing", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const blocker = Path.join(dir, "a-file")
      Fs.writeFileSync(blocker, "")
      const unwritable = yield* Effect.flip(send("ada@example.com").pipe(
        Effect.provide(OutboxEmailSender({ directory: Path.join(blocker, "outbox") }))
      ))
      assert.instanceOf(unwritable, EmailUnavailable)
      assert.include(unwritable.reason, "cannot be written")

      const outbox = Path.join(dir, "outbox")
      const refused = yield* Effect.flip(send("ada@example.com, eve@example.com").pipe(
        Effect.provide(OutboxEmailSender({ directory: outbox }))
      ))
      assert.instanceOf(refused, EmailRefused)
      assert.isFalse(Fs.existsSync(outbox))
    }))
})

describe("emailSenderLayer", () => {
  const choice = (over: Partial<Parameters<typeof emailSenderLayer>[0]>) => ({
    smtpUrl: Option.none(),
    smtpFrom: Option.none(),
    outboxDir: Option.none(),
    dataDir: ".data",
    ...over
  })
  const transport = (layer: ReturnType<typeof emailSenderLayer>) =>
    Effect.exit(EmailSender.use((email) => Effect.succeed(email.transport)).pipe(Effect.provide(layer)))

  it.live("SMTP when SMTP_URL is set (with SMTP_FROM), else the outbox in OUTBOX_DIR or DATA_DIR/outbox", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      assert.deepStrictEqual(yield* transport(emailSenderLayer(choice({ dataDir: dir }))), Exit.succeed("outbox"))
      assert.strictEqual(outboxDirectory(choice({ dataDir: dir })), Path.join(dir, "outbox"))
      assert.strictEqual(outboxDirectory(choice({ dataDir: dir, outboxDir: Option.some("/srv/mail") })), "/srv/mail")
      assert.strictEqual(outboxDirectory(choice({ dataDir: "memory://" })), Path.join(Os.tmpdir(), "model-platform-outbox"))

      const smtp = choice({ smtpUrl: Option.some(Redacted.make("smtp://127.0.0.1:2525")), smtpFrom: Option.some("a@b.example") })
      assert.deepStrictEqual(yield* transport(emailSenderLayer(smtp)), Exit.succeed("smtp"))

      const noFrom = yield* transport(emailSenderLayer(choice({ smtpUrl: Option.some(Redacted.make("smtp://127.0.0.1")) })))
      assert.isTrue(Exit.isFailure(noFrom) && Exit.findErrorOption(noFrom).pipe(Option.exists((e) => e instanceof MissingSmtpFrom)))

      const badUrl = yield* transport(emailSenderLayer(choice({
        smtpUrl: Option.some(Redacted.make("http://user:hunter2@mail.example")),
        smtpFrom: Option.some("a@b.example")
      })))
      const error = Exit.findErrorOption(badUrl)
      assert.isTrue(Option.exists(error, (e) => e instanceof InvalidSmtpUrl))
      assert.notInclude(String(Option.getOrUndefined(error)), "hunter2")
    }))

  it.live("the outbox delivers end to end through the chosen layer", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const sent = yield* send("ada@example.com").pipe(Effect.provide(emailSenderLayer(choice({ dataDir: dir }))))
      assert.isTrue(Fs.existsSync(Path.join(dir, "outbox", sent.id)))
    }))
})
