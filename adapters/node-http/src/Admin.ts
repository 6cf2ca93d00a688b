/**
 * `./platform admin …`: the operator console on the command line, over the operator API
 * (core/src/http/OperatorRoutes.ts; docs/operations.md "The operator console").
 *
 *   new-key <name>                                   make an operator key: prints the secret once and its OPERATOR_KEYS entry
 *   find --email <e> | --id <account> | --key <prefix or secret>
 *   account <account>                                balance, tier, keys, plans, recent calls
 *   credit <account> <credits> --reason <text> [--reference <ref>]
 *   revoke <account> <key> [--reason <text>]
 *   machines
 *   call <ref>
 *   reload                                           read the catalogue file again
 *   audit [YYYY-MM]
 *
 * The server: PLATFORM_URL (default http://127.0.0.1:$PORT, PORT 8080); the key: OPERATOR_KEY.
 * Answers are printed as JSON; a refusal's message goes to stderr and the exit code is 1.
 */
import { newOperatorKey } from "@model-platform/core/operator"
import { Effect } from "effect"

const USAGE = `usage: ./platform admin <command>
  new-key <name>
  find --email <email> | --id <account> | --key <prefix or secret>
  account <account>
  credit <account> <credits> --reason <text> [--reference <ref>]
  revoke <account> <key> [--reason <text>]
  machines
  call <ref>
  reload
  audit [YYYY-MM]
environment: PLATFORM_URL (default http://127.0.0.1:8080), OPERATOR_KEY`

const fail = (message: string): never => {
  process.stderr.write(`${message}\n`)
  process.exit(1)
}

/** `--name value` options and the positional arguments. */
const parse = (args: ReadonlyArray<string>) => {
  const options: Record<string, string> = {}
  const positional: Array<string> = []
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!
    if (arg.startsWith("--")) {
      const value = args[i + 1]
      if (value === undefined) fail(`${arg} needs a value\n${USAGE}`)
      options[arg.slice(2)] = value!
      i++
    } else positional.push(arg)
  }
  return { options, positional }
}

const base = (process.env.PLATFORM_URL ?? `http://127.0.0.1:${process.env.PORT ?? "8080"}`).replace(/\/$/, "")

const api = async (method: "GET" | "POST", path: string, body?: unknown): Promise<unknown> => {
  const key = process.env.OPERATOR_KEY ?? ""
  if (key === "") fail("Set OPERATOR_KEY to an operator key (`./platform admin new-key <name>` makes one).")
  let response: Response
  try {
    response = await fetch(`${base}/admin/api${path}`, {
      method,
      headers: { authorization: `Bearer ${key}`, ...(body === undefined ? {} : { "content-type": "application/json" }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) })
    })
  } catch (error) {
    return fail(`Could not reach ${base}: ${error instanceof Error ? error.message : String(error)}`)
  }
  const answer = await response.json().catch(() => ({})) as { error?: { code?: string; message?: string } }
  if (!response.ok) fail(`${response.status} ${answer.error?.code ?? ""}: ${answer.error?.message ?? "no message"}`)
  return answer
}

const need = (value: string | undefined, what: string): string => value ?? fail(`${what} is missing\n${USAGE}`)

const commands: Record<string, (args: ReadonlyArray<string>) => Promise<unknown>> = {
  "new-key": async (args) => {
    const name = need(parse(args).positional[0], "the operator's name")
    const made = await Effect.runPromise(Effect.result(newOperatorKey(name)))
    if (made._tag === "Failure") return fail(made.failure.message)
    process.stdout.write(
      [
        `Operator key for ${name} (shown only this once; keep it safe):`,
        "",
        `    ${made.success.secret}`,
        "",
        "Add this entry to the server's OPERATOR_KEYS (comma-separated with the others) and restart it:",
        "",
        `    ${made.success.entry}`,
        ""
      ].join("\n")
    )
    return undefined
  },
  find: (args) => {
    const { options } = parse(args)
    const given = (["email", "id", "key"] as const).filter((k) => options[k] !== undefined)
    if (given.length !== 1) fail(`find takes one of --email, --id, --key\n${USAGE}`)
    return api("GET", `/accounts?${new URLSearchParams({ [given[0]!]: options[given[0]!]! })}`)
  },
  account: (args) => api("GET", `/accounts/${encodeURIComponent(need(args[0], "the account id"))}`),
  credit: (args) => {
    const { options, positional } = parse(args)
    const amount = Number(need(positional[1], "the credits"))
    if (!Number.isFinite(amount)) fail("the credits must be a number")
    return api("POST", `/accounts/${encodeURIComponent(need(positional[0], "the account id"))}/credits`, {
      amount_credits: amount,
      reason: need(options.reason, "--reason"),
      ...(options.reference === undefined ? {} : { reference: options.reference })
    })
  },
  revoke: (args) => {
    const { options, positional } = parse(args)
    const account = encodeURIComponent(need(positional[0], "the account id"))
    const key = encodeURIComponent(need(positional[1], "the key id"))
    return api("POST", `/accounts/${account}/keys/${key}/revoke`, options.reason === undefined ? {} : { reason: options.reason })
  },
  machines: () => api("GET", "/machines"),
  call: (args) => api("GET", `/calls/${encodeURIComponent(need(args[0], "the call's ref"))}`),
  reload: () => api("POST", "/catalogue/reload"),
  audit: (args) => api("GET", args[0] === undefined ? "/audit" : `/audit?month=${encodeURIComponent(args[0])}`)
}

const [command, ...rest] = process.argv.slice(2)
const run = command === undefined ? undefined : commands[command]
if (run === undefined) fail(USAGE)
const answer = await run!(rest)
if (answer !== undefined) process.stdout.write(`${JSON.stringify(answer, null, 2)}\n`)
