/**
 * Prints a fresh owner key secret (`mpk_` and 256 random bits, made by core's `generateSecret`,
 * exactly as the platform makes every key) for the Lambda deployment's first start. The operator
 * keeps it in the SSM SecureString parameter the stack names in OWNER_KEY_SECRET_ID
 * (docs/lambda.md, "The owner key"); at the first start the platform makes the owner's key with
 * it, storing only its hash.
 *
 *   ./platform node adapters/lambda/scripts/new-owner-key.ts \
 *     | aws ssm put-parameter --name /model-platform/owner-key --type SecureString --value file:///dev/stdin
 *
 * The secret goes to stdout only (no newline when stdout is not a terminal, so it can be piped
 * as it is); the hints go to stderr.
 */
import { generateSecret } from "@model-platform/core/keys"
import { Effect } from "effect"
import { DEFAULT_OWNER_KEY_PARAMETER } from "../src/ConfigNames.ts"

const secret = Effect.runSync(generateSecret)

if (process.stdout.isTTY) {
  process.stdout.write(`${secret}\n`)
  process.stderr.write(
    [
      "",
      "This is the owner's API key: it holds every permission. Keep a copy somewhere safe, and store it",
      "for the first start without it passing through your shell history:",
      "",
      "  ./platform node adapters/lambda/scripts/new-owner-key.ts \\",
      `    | aws ssm put-parameter --name ${DEFAULT_OWNER_KEY_PARAMETER} --type SecureString --value file:///dev/stdin`,
      ""
    ].join("\n")
  )
} else {
  process.stdout.write(secret)
}
