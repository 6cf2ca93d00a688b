/**
 * Which EmailSender the Node server uses (docs/configuration.md "Email"): SMTP when SMTP_URL is
 * set, otherwise the file outbox in OUTBOX_DIR (default DATA_DIR/outbox). Not yet wired into
 * main.ts: the sign-up ceremonies of the account service are its first users.
 */
import { EmailSender } from "@model-platform/core/kernel"
import { Config, Effect, Layer, Option, type Redacted } from "effect"
import * as Os from "node:os"
import * as Path from "node:path"
import { OutboxEmailSender } from "./OutboxEmailSender.ts"
import { type InvalidSmtpUrl, SmtpEmailSender } from "./SmtpEmailSender.ts"
import { MEMORY } from "@model-platform/postgres-stores/database"

export const EmailConfig = Config.all({
  /** `smtp://user:pass@host:port` or `smtps://…`; unset: the outbox. */
  smtpUrl: Config.Redacted("SMTP_URL").pipe(Config.option),
  /** The From address; required with SMTP_URL. */
  smtpFrom: Config.String("SMTP_FROM").pipe(Config.option),
  /** Where the outbox writes messages when SMTP_URL is unset. Default DATA_DIR/outbox. */
  outboxDir: Config.String("OUTBOX_DIR").pipe(Config.option),
  dataDir: Config.String("DATA_DIR").pipe(Config.withDefault(".data"))
})
export type EmailConfig = Config.Success<typeof EmailConfig>

export interface EmailChoice {
  readonly smtpUrl: Option.Option<Redacted.Redacted<string>>
  readonly smtpFrom: Option.Option<string>
  readonly outboxDir: Option.Option<string>
  readonly dataDir: string
}

/** SMTP_URL is set without SMTP_FROM. */
export class MissingSmtpFrom extends Error {
  readonly _tag = "MissingSmtpFrom"
  constructor() {
    super("SMTP_URL is set but SMTP_FROM is not: set SMTP_FROM to the address mail is sent from")
    this.name = "MissingSmtpFrom"
  }
}

/**
 * The outbox directory: OUTBOX_DIR, else DATA_DIR/outbox; with the in-memory database
 * (DATA_DIR=memory://) a directory under the system's temporary directory.
 */
export const outboxDirectory = (choice: EmailChoice): string =>
  Option.getOrElse(choice.outboxDir, () =>
    choice.dataDir === MEMORY
      ? Path.join(Os.tmpdir(), "model-platform-outbox")
      : Path.join(choice.dataDir, "outbox"))

/** SMTP when SMTP_URL is set, else the outbox; the layer fails at build on a bad SMTP_URL or a missing SMTP_FROM. */
export const emailSenderLayer = (choice: EmailChoice): Layer.Layer<EmailSender, InvalidSmtpUrl | MissingSmtpFrom> =>
  Option.match(choice.smtpUrl, {
    onNone: () =>
      OutboxEmailSender({
        directory: outboxDirectory(choice),
        ...Option.match(choice.smtpFrom, { onNone: () => ({}), onSome: (from) => ({ from }) })
      }),
    onSome: (url) =>
      Option.match(choice.smtpFrom, {
        onNone: () => Layer.effect(EmailSender, Effect.fail(new MissingSmtpFrom())),
        onSome: (from) => SmtpEmailSender({ url, from })
      })
  })
