/**
 * Starts the reference machine from the environment:
 *   REFERENCE_MACHINE_PORT            default 8101
 *   REFERENCE_MACHINE_HOST            default 127.0.0.1
 *   REFERENCE_MACHINE_MODELS          comma-separated ids, default ref-chat,ref-embed,ref-forecast,ref-image
 *   REFERENCE_MACHINE_FAULTS          "1" or "true" enables POST/GET /_control
 *   REFERENCE_MACHINE_TOKEN_DELAY_MS  delay between stream chunks, default 0
 *   REFERENCE_MACHINE_ID              id reported by /health, default reference-machine
 *
 *   ./platform node adapters/reference-machine/src/main.ts
 */
import { startReferenceMachine } from "./ReferenceMachine.ts"

const env = process.env
const int = (name: string, fallback: number): number => {
  const raw = env[name]
  if (raw === undefined || raw === "") return fallback
  const n = Number(raw)
  if (!Number.isSafeInteger(n) || n < 0) {
    console.error(`${name} must be a non-negative integer, got ${raw}`)
    process.exit(2)
  }
  return n
}

const models = env.REFERENCE_MACHINE_MODELS?.split(",").map((s) => s.trim()).filter((s) => s.length > 0)
const machine = await startReferenceMachine({
  port: int("REFERENCE_MACHINE_PORT", 8101),
  host: env.REFERENCE_MACHINE_HOST || "127.0.0.1",
  ...(models === undefined || models.length === 0 ? {} : { models }),
  faults: env.REFERENCE_MACHINE_FAULTS === "1" || env.REFERENCE_MACHINE_FAULTS === "true",
  tokenDelayMs: int("REFERENCE_MACHINE_TOKEN_DELAY_MS", 0),
  ...(env.REFERENCE_MACHINE_ID ? { id: env.REFERENCE_MACHINE_ID } : {})
})
console.log(`reference machine serving ${machine.models.map((m) => m.id).join(", ")} at ${machine.url}`)

const stop = () => {
  machine.close().then(() => process.exit(0), () => process.exit(1))
}
process.once("SIGINT", stop)
process.once("SIGTERM", stop)
