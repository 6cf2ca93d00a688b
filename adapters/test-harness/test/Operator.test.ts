/** The operator API (OperatorSuite.ts) in process, over the memory stores. */
import { fixtureCatalogue } from "../src/Fixtures.ts"
import { startInProcess } from "../src/InProcess.ts"
import { operatorSuite } from "../src/OperatorSuite.ts"

operatorSuite("in-process, memory stores", (operatorKeys) => startInProcess(fixtureCatalogue, undefined, { operatorKeys }))
