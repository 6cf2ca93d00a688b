/**
 * The mails of the account service, and sending them with the refusals the ceremonies answer:
 * EmailRefused is invalid_email (use another address), EmailUnavailable is email_unavailable (try
 * again later). Links are one-time tokens; nothing here logs them.
 */
import { Effect } from "effect"
import type { EmailMessage, EmailSender } from "../kernel/EmailSender.ts"
import { accountError } from "./AccountErrors.ts"

export const send = (email: EmailSender["Service"], message: EmailMessage) =>
  email.send(message).pipe(
    Effect.asVoid,
    Effect.catchTags({
      EmailRefused: () => accountError("invalid_email", "This address does not accept our mail; use another one."),
      EmailUnavailable: (e) =>
        Effect.andThen(
          Effect.logWarning("account mail not sent", { reason: e.reason }),
          accountError("email_unavailable", "We could not send the mail just now; try again in a few minutes.")
        )
    })
  )

const readable = (at: string) => at.replace("T", " ").replace(/\.\d{3}Z$/, " UTC")

export const confirmationMail = (to: string, link: string, expiresAt: string): EmailMessage => ({
  to,
  subject: "Confirm your Model Platform account",
  text: [
    "Someone (we hope you) signed up at Model Platform with this address and a new passkey.",
    "Confirming creates your account.",
    "",
    `Confirm: ${link}`,
    "",
    `The link works once, until ${readable(expiresAt)}. If it was not you, ignore this mail: nothing is created.`
  ].join("\n")
})

export const recoveryMail = (to: string, link: string, usableFrom: string, expiresAt: string): EmailMessage => ({
  to,
  subject: "Recovering your Model Platform account",
  text: [
    "Someone (we hope you) asked to recover the Model Platform account of this address, to register a new passkey.",
    "",
    `For your safety the link works only from ${readable(usableFrom)} until ${readable(expiresAt)}:`,
    link,
    "",
    "If it was not you, sign in with your passkey: signing in cancels the recovery (so does the",
    "cancel button on your account page). Completing it signs out every device."
  ].join("\n")
})
