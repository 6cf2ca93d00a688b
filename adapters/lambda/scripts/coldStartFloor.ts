/**
 * The floor of a cold start, which `cold-start.ts` measures beside the platform's (docs/lambda.md
 * "Cold start"): a handler with no platform in it. It does the AWS work a platform's cold start
 * does, with the same SDK clients, the same environment and the same bundling: the catalogue
 * read from its SSM parameter, then three DynamoDB reads one after the other (the first start's:
 * the first account, its record, the owner's identity), then GET /models answered from the
 * catalogue's JSON. What the platform's cold start costs beyond it is the platform's own: Effect,
 * the layers, the router, the checks.
 *
 * It sets the marks `src/lambda.ts` sets (ConfigNames.ts INIT_MARKS), so the script reads both
 * alike.
 */
import { DynamoDBClient } from "@aws-sdk/client-dynamodb"
import { GetParameterCommand, SSMClient } from "@aws-sdk/client-ssm"
import { DynamoDBDocumentClient, GetCommand } from "@aws-sdk/lib-dynamodb"
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2 } from "aws-lambda"
import { ENV, INIT_MARKS } from "../src/ConfigNames.ts"

performance.mark(INIT_MARKS.evaluated)

const table = process.env[ENV.table]
const ssm = new SSMClient({})
const parameter = await ssm.send(new GetParameterCommand({ Name: process.env[ENV.catalogueParameter] }))
const catalogue = JSON.parse(parameter.Parameter?.Value ?? "{}") as { readonly models?: ReadonlyArray<unknown> }
performance.mark(INIT_MARKS.catalogue)

const documents = DynamoDBDocumentClient.from(new DynamoDBClient({}))
const read = (pk: string) => documents.send(new GetCommand({ TableName: table, Key: { pk, sk: pk } }))
for (const pk of ["ACCOUNTS#FIRST", "ACCOUNT#floor", "IDENTITY#floor"]) await read(pk)
performance.mark(INIT_MARKS.ready)

const models = JSON.stringify({ object: "list", data: catalogue.models ?? [] })

/** GET /models from the catalogue read at init; anything else with one more read (a key's lookup). */
export const handler = async (event: APIGatewayProxyEventV2): Promise<APIGatewayProxyStructuredResultV2> => {
  if (event.rawPath !== "/models") await read("KEY#floor")
  return { statusCode: 200, headers: { "content-type": "application/json" }, body: models }
}
