/** Datasets and the Fieldwork participant flow (FieldworkSuite.ts) through the in-process web handler on memory stores. */
import { fieldworkSuite } from "../src/FieldworkSuite.ts"
import { fixtureCatalogue } from "../src/Fixtures.ts"
import { startInProcess } from "../src/InProcess.ts"

fieldworkSuite("in-process, memory stores", () => startInProcess(fixtureCatalogue))
