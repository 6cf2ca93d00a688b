/** Plans and rentals over time (test-harness PlansLifecycleSuite.ts) through the in-process web handler on the memory stores. */
import { plansLifecycleSuite } from "../src/PlansLifecycleSuite.ts"
import { startInProcess } from "../src/InProcess.ts"

plansLifecycleSuite("in-process, memory stores", (catalogue, options) => startInProcess(catalogue, undefined, options))
