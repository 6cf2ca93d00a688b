/**
 * What a process holds alive, for tests that promise a bounded footprint (a download streamed
 * rather than read whole): memory is measured right after a full garbage collection, so what was
 * already dropped does not count. V8's `gc` is reached through its --expose-gc flag, set at run
 * time (tests need no Node option); where it cannot be had, `liveBytes` measures without
 * collecting and says so.
 */
import * as V8 from "node:v8"
import * as Vm from "node:vm"

const collector = ((): (() => void) | undefined => {
  const existing = (globalThis as { gc?: () => void }).gc
  if (typeof existing === "function") return existing
  try {
    V8.setFlagsFromString("--expose-gc")
    const gc = Vm.runInNewContext("gc") as unknown
    return typeof gc === "function" ? (gc as () => void) : undefined
  } catch {
    return undefined
  }
})()

/** Whether `liveBytes` collects garbage first (else it counts what is not yet collected too). */
export const canCollect = collector !== undefined

/**
 * Bytes held in ArrayBuffers (Buffers, Uint8Arrays: where file and network bytes live) and on
 * the JavaScript heap, after a full collection when one can be forced.
 */
export const liveBytes = (): number => {
  collector?.()
  const usage = process.memoryUsage()
  return usage.arrayBuffers + usage.heapUsed
}
