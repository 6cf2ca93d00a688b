import { fixtureCatalogue } from "@model-platform/test-harness/Fixtures"
import { platformHttpSuite } from "@model-platform/test-harness/HttpSuite"
import { startLambda } from "./support.ts"

platformHttpSuite("lambda (API Gateway v2)", () => startLambda(fixtureCatalogue))
