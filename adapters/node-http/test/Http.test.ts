import { fixtureCatalogue } from "@model-platform/test-harness/Fixtures"
import { platformHttpSuite } from "@model-platform/test-harness/HttpSuite"
import { MemoryStores } from "@model-platform/test-harness/MemoryStores"
import { startNodeServer } from "./support.ts"

platformHttpSuite("node-http, memory stores", () => startNodeServer(fixtureCatalogue, MemoryStores))
