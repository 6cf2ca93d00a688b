/**
 * The CDK app, synthesised offline (no AWS account, no Docker, no bundling: the functions' code
 * is a stub directory) and checked with aws-cdk-lib/assertions: the resources the Lambda shell
 * needs, the table exactly as the stores define it (adapters/dynamodb-stores/src/DynamoTable.ts),
 * and an IAM policy that grants the functions the table, the bucket, the catalogue and owner key
 * parameters and their logs, and nothing else; the HTTP API's routes to the API and accounts
 * functions. Also the bundle script, on a small fixture entry and on the real one (with the
 * WebAuthn bundle beside it).
 */
import { readWebAuthnBundle } from "@model-platform/node-http/Accounts"
import { Match, Template } from "aws-cdk-lib/assertions"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { fileURLToPath, pathToFileURL } from "node:url"
import { afterAll, assert, beforeAll, describe, it } from "vitest"
import { buildApp } from "../cdk/app.ts"
import { bundle, DEFAULT_ENTRY } from "../cdk/bundle.ts"
import {
  DEFAULT_CATALOGUE_PARAMETER,
  DEFAULT_OWNER_KEY_PARAMETER,
  DEFAULT_STRIPE_SECRET_KEY_PARAMETER,
  DEFAULT_STRIPE_WEBHOOK_SECRET_PARAMETER,
  ENV,
  HANDLERS,
  type PlatformStack
} from "../cdk/stack.ts"
import { WEBAUTHN_BUNDLE_FILE } from "../src/Accounts.ts"
import { PK, SK, tableDefinition, TTL_ATTRIBUTE } from "@model-platform/dynamodb-stores"

const here = Path.dirname(fileURLToPath(import.meta.url))
const DEMO_CATALOGUE = Path.join(here, "..", "..", "node-http", "catalogue.demo.json")

const temp = Fs.mkdtempSync(Path.join(Os.tmpdir(), "cdk-test-"))
afterAll(() => Fs.rmSync(temp, { recursive: true, force: true }))

/** Stands in for the bundle: synthesis only copies it. */
const stubBundle = (() => {
  const dir = Path.join(temp, "bundle")
  Fs.mkdirSync(dir)
  Fs.writeFileSync(Path.join(dir, "index.mjs"), "export const handler = async () => ({ statusCode: 200 }); export const streamHandler = handler\n")
  return dir
})()

const synth = async (context: Record<string, string> = {}) => {
  const started = Date.now()
  const { stack } = await buildApp({ bundleDir: stubBundle, outdir: Fs.mkdtempSync(Path.join(temp, "out-")), context })
  const template = Template.fromStack(stack)
  return { stack, template, millis: Date.now() - started }
}

type Resources = Record<string, { readonly Type: string; readonly Properties?: Record<string, unknown> }>

/** The logical id of the only resource of `type`. */
const onlyId = (template: Template, type: string): string => {
  const ids = Object.keys(template.findResources(type))
  assert.strictEqual(ids.length, 1, `one ${type}`)
  return ids[0]!
}

const asArray = <T>(value: T | ReadonlyArray<T>): ReadonlyArray<T> => (Array.isArray(value) ? value : [value as T])

describe("PlatformStack", () => {
  let stack: PlatformStack
  let template: Template
  let synthMillis = 0

  beforeAll(async () => {
    const result = await synth()
    stack = result.stack
    template = result.template
    synthMillis = result.millis
    console.log(`cdk synth (construct + Template.fromStack): ${synthMillis} ms`)
  }, 60_000)

  it("synthesises in seconds", () => {
    assert.isBelow(synthMillis, 30_000)
  })

  it("creates exactly the resources of the design", () => {
    template.resourceCountIs("AWS::DynamoDB::Table", 1)
    template.resourceCountIs("AWS::S3::Bucket", 1)
    template.resourceCountIs("AWS::Lambda::Function", 4)
    template.resourceCountIs("AWS::IAM::Role", 1)
    template.resourceCountIs("AWS::ApiGatewayV2::Api", 1)
    template.resourceCountIs("AWS::ApiGatewayV2::Route", 3)
    template.resourceCountIs("AWS::ApiGatewayV2::Integration", 2)
    template.resourceCountIs("AWS::Lambda::Url", 1)
    // referenced, not created: the catalogue without catalogueFile, the owner key always (SecureString)
    template.resourceCountIs("AWS::SSM::Parameter", 0)
  })

  it("the table the stores define: string pk/sk, on demand, no index, the TTL attribute; point-in-time recovery", () => {
    const definition = tableDefinition("any")
    template.hasResourceProperties("AWS::DynamoDB::Table", {
      KeySchema: [
        { AttributeName: PK, KeyType: "HASH" },
        { AttributeName: SK, KeyType: "RANGE" }
      ],
      AttributeDefinitions: definition.AttributeDefinitions,
      BillingMode: definition.BillingMode,
      PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true }
    })
    assert.deepStrictEqual(definition.KeySchema, [
      { AttributeName: "pk", KeyType: "HASH" },
      { AttributeName: "sk", KeyType: "RANGE" }
    ])
    // The stores query no index; rate-limit counters carry the expiry attribute.
    const table = Object.values(template.findResources("AWS::DynamoDB::Table") as Resources)[0]!.Properties!
    assert.isUndefined(table["GlobalSecondaryIndexes"])
    assert.isUndefined(table["LocalSecondaryIndexes"])
    assert.deepStrictEqual(table["TimeToLiveSpecification"], { AttributeName: TTL_ATTRIBUTE, Enabled: true })
    assert.isUndefined(definition.GlobalSecondaryIndexes)
    template.hasResource("AWS::DynamoDB::Table", { DeletionPolicy: "Retain", UpdateReplacePolicy: "Retain" })
  })

  it("a private, encrypted bucket that refuses plain HTTP and clears unfinished uploads", () => {
    template.hasResourceProperties("AWS::S3::Bucket", {
      PublicAccessBlockConfiguration: {
        BlockPublicAcls: true,
        BlockPublicPolicy: true,
        IgnorePublicAcls: true,
        RestrictPublicBuckets: true
      },
      BucketEncryption: {
        ServerSideEncryptionConfiguration: [{ ServerSideEncryptionByDefault: { SSEAlgorithm: "AES256" } }]
      },
      OwnershipControls: { Rules: [{ ObjectOwnership: "BucketOwnerEnforced" }] },
      LifecycleConfiguration: { Rules: [{ AbortIncompleteMultipartUpload: { DaysAfterInitiation: 1 }, Status: "Enabled" }] }
    })
    template.hasResource("AWS::S3::Bucket", { DeletionPolicy: "Retain" })
    const bucketId = onlyId(template, "AWS::S3::Bucket")
    template.hasResourceProperties("AWS::S3::BucketPolicy", {
      Bucket: { Ref: bucketId },
      PolicyDocument: {
        Statement: Match.arrayWith([Match.objectLike({
          Effect: "Deny",
          Action: "s3:*",
          Principal: { AWS: "*" },
          Condition: { Bool: { "aws:SecureTransport": "false" } }
        })])
      }
    })
  })

  it("four Node 22 arm64 functions from the bundle, with the table, bucket and configuration in their environment", () => {
    const tableId = onlyId(template, "AWS::DynamoDB::Table")
    const bucketId = onlyId(template, "AWS::S3::Bucket")
    const roleId = onlyId(template, "AWS::IAM::Role")
    const apiId = onlyId(template, "AWS::ApiGatewayV2::Api")
    const functions = template.findResources("AWS::Lambda::Function") as Resources
    const handlers = [
      [stack.apiFunction, HANDLERS.api, 30],
      [stack.accountsFunction, HANDLERS.accounts, 30],
      [stack.streamFunction, HANDLERS.stream, 300],
      [stack.watchFunction, HANDLERS.watch, 55]
    ] as const
    for (const [fn, handler, timeout] of handlers) {
      const properties = functions[stack.getLogicalId(fn.node.defaultChild as never)]!.Properties!
      assert.deepInclude(properties, {
        Runtime: "nodejs22.x",
        Architectures: ["arm64"],
        Handler: handler,
        Timeout: timeout,
        Role: { "Fn::GetAtt": [roleId, "Arn"] }
      })
      // The same environment for every function: one platform, the account service's included.
      assert.deepStrictEqual(properties["Environment"], {
        Variables: {
          [ENV.table]: { Ref: tableId },
          [ENV.bucket]: { Ref: bucketId },
          [ENV.catalogueParameter]: DEFAULT_CATALOGUE_PARAMETER,
          [ENV.ownerEmail]: { Ref: "OwnerEmail" },
          [ENV.ownerKeySecretId]: DEFAULT_OWNER_KEY_PARAMETER,
          [ENV.smtpUrl]: { Ref: "SmtpUrl" },
          [ENV.smtpFrom]: { Ref: "SmtpFrom" },
          [ENV.platformClientSecret]: { Ref: "PlatformClientSecret" },
          [ENV.platformSigningKey]: { Ref: "PlatformSigningKey" },
          [ENV.stripeSecretKeyParameter]: DEFAULT_STRIPE_SECRET_KEY_PARAMETER,
          [ENV.stripeWebhookSecretParameter]: DEFAULT_STRIPE_WEBHOOK_SECRET_PARAMETER,
          [ENV.accountsUrl]: { "Fn::Join": ["", [{ "Fn::GetAtt": [apiId, "ApiEndpoint"] }, "/accounts"]] },
          NODE_OPTIONS: "--enable-source-maps"
        }
      })
    }
    template.hasParameter("OwnerEmail", { Type: "String", AllowedPattern: Match.anyValue() })
    // The SMTP URL holds the relay's password: never echoed; both empty by default (no account service).
    template.hasParameter("SmtpUrl", { Type: "String", NoEcho: true, Default: "" })
    template.hasParameter("SmtpFrom", { Type: "String", Default: "" })
    // The approvals API's client secret and the signing key: never echoed, empty by default.
    template.hasParameter("PlatformClientSecret", { Type: "String", NoEcho: true, Default: "" })
    template.hasParameter("PlatformSigningKey", { Type: "String", NoEcho: true, Default: "" })
  })

  it("an HTTP API sending /accounts and /accounts/* to the accounts function, every other route to the API function (payload 2.0)", () => {
    template.hasResourceProperties("AWS::ApiGatewayV2::Api", { ProtocolType: "HTTP" })
    const integrations = template.findResources("AWS::ApiGatewayV2::Integration") as Resources
    /** The function each route's integration invokes. */
    const routes = Object.values(template.findResources("AWS::ApiGatewayV2::Route") as Resources).map((route) => {
      const target = JSON.stringify(route.Properties!["Target"])
      const integrationId = Object.keys(integrations).find((id) => target.includes(`"${id}"`))!
      const integration = integrations[integrationId]!.Properties!
      assert.deepInclude(integration, { IntegrationType: "AWS_PROXY", PayloadFormatVersion: "2.0" })
      return [route.Properties!["RouteKey"], (integration["IntegrationUri"] as { "Fn::GetAtt": [string, string] })["Fn::GetAtt"][0]]
    })
    const id = (fn: typeof stack.apiFunction) => stack.getLogicalId(fn.node.defaultChild as never)
    assert.sameDeepMembers(routes, [
      ["$default", id(stack.apiFunction)],
      ["ANY /accounts", id(stack.accountsFunction)],
      ["ANY /accounts/{proxy+}", id(stack.accountsFunction)]
    ])
    template.hasResourceProperties("AWS::ApiGatewayV2::Stage", { StageName: "$default", AutoDeploy: true })
    template.hasOutput("AccountsUrl", {})
  })

  it("an EventBridge rule running the watch function every minute, without retries", () => {
    const watchFunctionId = stack.getLogicalId(stack.watchFunction.node.defaultChild as never)
    template.resourceCountIs("AWS::Events::Rule", 1)
    template.hasResourceProperties("AWS::Events::Rule", {
      ScheduleExpression: "rate(1 minute)",
      State: "ENABLED",
      Targets: [Match.objectLike({ Arn: { "Fn::GetAtt": [watchFunctionId, "Arn"] }, RetryPolicy: { MaximumRetryAttempts: 0 } })]
    })
    template.hasResourceProperties("AWS::Lambda::Permission", {
      Action: "lambda:InvokeFunction",
      Principal: "events.amazonaws.com",
      FunctionName: { "Fn::GetAtt": [watchFunctionId, "Arn"] }
    })
  })

  it("a Function URL streaming the stream function's responses", () => {
    const streamFunctionId = stack.getLogicalId(stack.streamFunction.node.defaultChild as never)
    template.hasResourceProperties("AWS::Lambda::Url", {
      InvokeMode: "RESPONSE_STREAM",
      AuthType: "NONE",
      TargetFunctionArn: { "Fn::GetAtt": [streamFunctionId, "Arn"] }
    })
    template.hasOutput("StreamUrl", {})
    template.hasOutput("ApiUrl", {})
  })

  it("IAM: the table, the bucket, GetParameter on the catalogue, the owner key and Stripe's two secrets, the function logs, nothing else", () => {
    const tableId = onlyId(template, "AWS::DynamoDB::Table")
    const bucketId = onlyId(template, "AWS::S3::Bucket")
    const roleId = onlyId(template, "AWS::IAM::Role")
    const logGroupIds = Object.keys(template.findResources("AWS::Logs::LogGroup"))
    assert.strictEqual(logGroupIds.length, 4)

    // the role: assumed by Lambda only, no managed policy (not even the basic execution role)
    const role = template.findResources("AWS::IAM::Role")[roleId]!
    assert.isUndefined(role["Properties"]?.["ManagedPolicyArns"], "no managed policies")
    assert.deepStrictEqual(role["Properties"]?.["AssumeRolePolicyDocument"]?.["Statement"], [
      { Action: "sts:AssumeRole", Effect: "Allow", Principal: { Service: "lambda.amazonaws.com" } }
    ])
    assert.isUndefined(role["Properties"]?.["Policies"], "no inline policies on the role itself")

    // every policy in the template is attached to that role
    const policies = Object.values(template.findResources("AWS::IAM::Policy") as Resources)
    assert.strictEqual(policies.length, 1)
    assert.deepStrictEqual(policies[0]!.Properties?.["Roles"], [{ Ref: roleId }])
    const statements = (policies[0]!.Properties?.["PolicyDocument"] as { Statement: Array<Record<string, unknown>> }).Statement

    const tableArn = { "Fn::GetAtt": [tableId, "Arn"] }
    const bucketArn = { "Fn::GetAtt": [bucketId, "Arn"] }
    const allowed = [
      JSON.stringify(tableArn),
      JSON.stringify({ "Fn::Join": ["", [tableArn, "/index/*"]] }),
      JSON.stringify(bucketArn),
      JSON.stringify({ "Fn::Join": ["", [bucketArn, "/*"]] }),
      ...logGroupIds.map((id) => JSON.stringify({ "Fn::GetAtt": [id, "Arn"] }))
    ]
    /** `:parameter/model-platform/catalogue` ends the ARN's Fn::Join. */
    const parameterArnEnd = (name: string) => `${JSON.stringify(`:parameter${name}`).slice(1, -1)}"]]}`
    const ssmResources: Array<string> = []
    const seen = new Set<string>()
    for (const statement of statements) {
      assert.strictEqual(statement["Effect"], "Allow")
      assert.isUndefined(statement["NotAction"])
      assert.isUndefined(statement["NotResource"])
      const actions = asArray(statement["Action"] as string | Array<string>)
      const resources = asArray(statement["Resource"])
      const service = actions[0]!.split(":")[0]!
      assert.isTrue(actions.every((a) => a.startsWith(`${service}:`)), `one service per statement: ${actions}`)
      assert.notInclude(actions, "*")
      seen.add(service)
      for (const resource of resources) {
        const text = JSON.stringify(resource)
        assert.notStrictEqual(resource, "*", `no wildcard resource (${actions})`)
        if (service === "ssm") {
          assert.deepStrictEqual(actions, ["ssm:GetParameter"])
          ssmResources.push(text)
        } else {
          assert.include(allowed, text, `${service} on an allowed resource`)
          if (service === "dynamodb") assert.include(text, tableId)
          if (service === "s3") assert.include(text, bucketId)
          if (service === "logs") {
            assert.sameMembers([...actions], ["logs:CreateLogStream", "logs:PutLogEvents"])
          }
        }
      }
    }
    assert.sameMembers([...seen], ["dynamodb", "s3", "ssm", "logs"])
    // GetParameter on exactly four parameters: the catalogue, the owner key and Stripe's secret key
    // and webhook signing secret (no path wildcard)
    assert.strictEqual(ssmResources.length, 4)
    assert.isTrue(ssmResources.some((text) => text.endsWith(parameterArnEnd(DEFAULT_CATALOGUE_PARAMETER))), "the catalogue parameter")
    assert.isTrue(ssmResources.some((text) => text.endsWith(parameterArnEnd(DEFAULT_OWNER_KEY_PARAMETER))), "the owner key parameter")
    assert.isTrue(ssmResources.some((text) => text.endsWith(parameterArnEnd(DEFAULT_STRIPE_SECRET_KEY_PARAMETER))), "Stripe's secret key")
    assert.isTrue(ssmResources.some((text) => text.endsWith(parameterArnEnd(DEFAULT_STRIPE_WEBHOOK_SECRET_PARAMETER))), "Stripe's webhook secret")
    for (const text of ssmResources) assert.notInclude(text, "*")
    // read and write on the data, nothing administrative
    const actions = statements.flatMap((s) => asArray(s["Action"] as string | Array<string>))
    for (const required of ["dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:Query", "dynamodb:UpdateItem", "dynamodb:DeleteItem", "s3:GetObject*", "s3:PutObject", "s3:DeleteObject*", "s3:List*"]) {
      assert.include(actions, required)
    }
    for (const forbidden of ["dynamodb:DeleteTable", "dynamodb:*", "s3:*", "s3:DeleteBucket", "s3:PutBucketPolicy", "ssm:PutParameter", "ssm:GetParametersByPath", "kms:Decrypt", "iam:PassRole"]) {
      assert.notInclude(actions, forbidden)
    }
  })

  it("who may invoke the functions: the HTTP API for two (one permission per route), the public Function URL for the third, the schedule for the fourth", () => {
    const permissions = Object.values(template.findResources("AWS::Lambda::Permission") as Resources).map((p) => p.Properties!)
    assert.strictEqual(permissions.length, 6)
    assert.sameDeepMembers(permissions.map((p) => [p["Action"], p["Principal"]]), [
      ["lambda:InvokeFunction", "apigateway.amazonaws.com"],
      ["lambda:InvokeFunction", "apigateway.amazonaws.com"],
      ["lambda:InvokeFunction", "apigateway.amazonaws.com"],
      ["lambda:InvokeFunctionUrl", "*"],
      ["lambda:InvokeFunction", "*"],
      ["lambda:InvokeFunction", "events.amazonaws.com"]
    ])
    const publicInvoke = permissions.find((p) => p["Action"] === "lambda:InvokeFunction" && p["Principal"] === "*")
    assert.strictEqual(publicInvoke?.["InvokedViaFunctionUrl"], true, "public invoke only through the URL")
  })
})

describe("PlatformStack options", () => {
  it("creates the catalogue parameter from a file, minified, on the tier its size needs; names another owner key parameter, the accounts address and more environment", async () => {
    const { template } = await synth({
      catalogueFile: DEMO_CATALOGUE,
      catalogueParameter: "/mp/test/catalogue",
      ownerKeyParameter: "/mp/test/owner-key",
      accountsUrl: "https://accounts.example.com/accounts",
      retainData: "false",
      environment: JSON.stringify({ BASE_RPC_URL: "https://rpc.example.com", DEPOSIT_XPUB: "xpub-test" })
    })
    const minified = JSON.stringify(JSON.parse(Fs.readFileSync(DEMO_CATALOGUE, "utf8")))
    template.hasResourceProperties("AWS::SSM::Parameter", {
      Name: "/mp/test/catalogue",
      Type: "String",
      Value: minified,
      Tier: Buffer.byteLength(minified) > 4096 ? "Advanced" : "Standard"
    })
    template.hasResourceProperties("AWS::Lambda::Function", {
      Environment: {
        Variables: Match.objectLike({
          [ENV.catalogueParameter]: "/mp/test/catalogue",
          [ENV.ownerKeySecretId]: "/mp/test/owner-key",
          [ENV.accountsUrl]: "https://accounts.example.com/accounts",
          // The "evm" rail's variables (the catalogue names them), in every function.
          BASE_RPC_URL: "https://rpc.example.com",
          DEPOSIT_XPUB: "xpub-test"
        })
      }
    })
    template.hasResource("AWS::DynamoDB::Table", { DeletionPolicy: "Delete" })
    const policy = JSON.stringify(template.findResources("AWS::IAM::Policy"))
    assert.include(policy, "ssm:GetParameter")
    assert.include(policy, "Catalogue", "GetParameter on the created parameter")
    assert.include(policy, ":parameter/mp/test/owner-key", "GetParameter on the owner key parameter")
    // The owner key's value never appears in the template: nothing resolves it.
    assert.notInclude(JSON.stringify(template.toJSON()), "ssm-secure")
  }, 60_000)
})

describe("bundle.ts", () => {
  it("bundles an entry and its dependencies into one ES module that runs", async () => {
    // inside the package (dist/ is ignored by git), so the fixture resolves the package's dependencies
    Fs.mkdirSync(Path.join(here, "..", "dist"), { recursive: true })
    const fixtureDir = Fs.mkdtempSync(Path.join(here, "..", "dist", ".bundle-test-"))
    try {
      const entry = Path.join(fixtureDir, "entry.ts")
      Fs.writeFileSync(entry, [
        `import { S3Client } from "@aws-sdk/client-s3"`,
        `import { Effect } from "effect"`,
        `export const handler = async (event: { readonly name: string }) => ({`,
        `  statusCode: 200,`,
        `  body: Effect.runSync(Effect.succeed("hello " + event.name)) + " " + typeof S3Client`,
        `})`,
        `export const streamHandler = handler`
      ].join("\n"))
      const result = await bundle({ entry, outDir: Path.join(fixtureDir, "out") })
      console.log(`bundle of the fixture: ${(result.bytes / 1024).toFixed(0)} KB in ${result.millis} ms`)
      assert.sameMembers([...result.exports], ["handler", "streamHandler"])
      assert.isTrue(Fs.existsSync(`${result.outFile}.map`), "source map")
      const module = await import(pathToFileURL(result.outFile).href) as {
        handler: (event: { name: string }) => Promise<{ statusCode: number; body: string }>
      }
      assert.deepStrictEqual(await module.handler({ name: "lambda" }), { statusCode: 200, body: "hello lambda function" })
    } finally {
      Fs.rmSync(fixtureDir, { recursive: true, force: true })
    }
  }, 60_000)

  it("the real entry bundles and exports the handlers the stack names", async () => {
    assert.isTrue(Fs.existsSync(DEFAULT_ENTRY), "src/lambda.ts")
    const result = await bundle({ outDir: Path.join(temp, "real-bundle") })
    console.log(`bundle of src/lambda.ts: ${(result.bytes / 1024).toFixed(0)} KB in ${result.millis} ms`)
    const named = new Set([HANDLERS.api, HANDLERS.accounts, HANDLERS.stream, HANDLERS.watch].map((handler) => handler.split(".")[1]!))
    assert.sameMembers([...result.exports], [...named])
    // The account pages' WebAuthn bundle beside index.mjs, where src/Accounts.ts reads it.
    assert.strictEqual(Fs.readFileSync(Path.join(result.outDir, WEBAUTHN_BUNDLE_FILE), "utf8"), readWebAuthnBundle())
    // A cold start compiles what it reads (docs/lambda.md "Cold start"): the /docs page's script,
    // passkeys, SMTP and S3 are in chunks read when first used, not at start.
    console.log(`read at start: ${(result.startBytes / 1024).toFixed(0)} KB; when first used: ${(result.lazyBytes / 1024).toFixed(0)} KB`)
    for (const lazy of ["httpApiScalar", "@simplewebauthn/server", "nodemailer", "@aws-sdk/client-s3", "src/S3BlobStore.ts"]) {
      assert.isFalse(result.startInputs.some((input) => input.includes(lazy)), `${lazy} is read at start`)
    }
    assert.isBelow(result.startBytes, 2_000_000, "what a start reads")
  }, 60_000)
})
