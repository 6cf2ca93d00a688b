/**
 * A real SMTP server on 127.0.0.1 for tests (smtp-server; no TLS, no authentication), keeping
 * every mail it accepts parsed (mailparser): what a test's platform sends over SMTP arrives here.
 */
import { type ParsedMail, simpleParser } from "mailparser"
import type * as Net from "node:net"
import { SMTPServer } from "smtp-server"

export interface Mailbox {
  /** smtp://127.0.0.1:<port> */
  readonly url: string
  readonly received: Array<ParsedMail>
  readonly close: () => Promise<void>
}

export const startSmtp = (): Promise<Mailbox> =>
  new Promise((done) => {
    const received: Array<ParsedMail> = []
    const server = new SMTPServer({
      logger: false,
      disabledCommands: ["STARTTLS"],
      authOptional: true,
      onData: (stream, _session, callback) => {
        simpleParser(stream).then((mail) => {
          received.push(mail)
          callback()
        }, (error: Error) => callback(error))
      }
    })
    server.listen(0, "127.0.0.1", () =>
      done({
        url: `smtp://127.0.0.1:${(server.server.address() as Net.AddressInfo).port}`,
        received,
        close: () => new Promise((closed) => server.close(() => closed()))
      }))
  })

/** The addresses a mail was sent to. */
export const recipients = (mail: ParsedMail): Array<string> =>
  (Array.isArray(mail.to) ? mail.to : mail.to === undefined ? [] : [mail.to]).flatMap((to) => to.value.map((v) => v.address ?? ""))
