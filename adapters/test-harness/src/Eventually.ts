/**
 * Polls `check` until it passes or `timeoutMs` has gone by (then its last failure is thrown): for
 * what happens after an answer — metering settles in the background, jobs run on a timer.
 */
export const eventually = async <A>(check: () => Promise<A>, timeoutMs = 20_000): Promise<A> => {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    try {
      return await check()
    } catch (error) {
      if (Date.now() > deadline) throw error
      await new Promise((r) => setTimeout(r, 100))
    }
  }
}
