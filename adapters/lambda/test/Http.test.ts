import { fixtureCatalogue } from "@model-platform/test-harness/Fixtures"
import { platformHttpSuite } from "@model-platform/test-harness/HttpSuite"
import { permissionMatrixSuite } from "@model-platform/test-harness/PermissionMatrix"
import { startLambda } from "./support.ts"

platformHttpSuite("lambda (API Gateway v2)", () => startLambda(fixtureCatalogue))

permissionMatrixSuite("lambda (API Gateway v2)", () => startLambda(fixtureCatalogue))
