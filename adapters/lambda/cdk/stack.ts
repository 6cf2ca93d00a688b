/**
 * The AWS deployment of the Lambda shell, as one CDK stack (docs/lambda-deploy.md):
 *
 * - one DynamoDB table, declared by the stores' own `tableDefinition`
 *   (adapters/dynamodb-stores/src/DynamoTable.ts: keys, billing mode, indexes, TTL attribute), plus
 *   point-in-time recovery;
 * - one S3 bucket for blobs (no public access, S3-managed encryption, TLS only, unfinished
 *   multipart uploads cleared after a day);
 * - three functions from the same esbuild bundle (Node 22, arm64): `ApiFunction` answers the HTTP
 *   API (API Gateway v2, payload 2.0, every route but the account service's), `AccountsFunction`
 *   its `/accounts` routes (the account service, docs/accounts.md), `StreamFunction` a Function
 *   URL with response streaming (SSE), which API Gateway can not carry;
 * - a fourth, `WatchFunction`, run every minute by an EventBridge rule: one pass of the stablecoin
 *   deposit watcher (the "evm" rail; without it a pass does nothing);
 * - one IAM role for all four: read/write on the table (and its indexes) and the bucket, GetParameter
 *   on the catalogue parameter and the owner key parameter, writing to their own log groups;
 *   nothing else;
 * - configuration (src/Config.ts): the catalogue JSON in SSM Parameter Store (its name in
 *   CATALOGUE_PARAMETER, read at cold start), the owner key's secret in an SSM SecureString
 *   parameter the operator creates before the first deploy (its name in OWNER_KEY_SECRET_ID, read
 *   at the first start only), the bootstrap owner's email as a CloudFormation parameter
 *   (OWNER_EMAIL), the account service's mail as two more (SMTP_URL, no echo, and SMTP_FROM;
 *   empty: no account service) and its address (ACCOUNTS_URL: the HTTP API's + /accounts unless
 *   given).
 *
 * The table is not described twice: its keys and indexes come from the stores' `tableDefinition`,
 * the environment variables' names and the parameters' default names from src/ConfigNames.ts.
 */
import { CfnOutput, CfnParameter, Duration, RemovalPolicy, Stack, type StackProps } from "aws-cdk-lib"
import { HttpApi, HttpMethod } from "aws-cdk-lib/aws-apigatewayv2"
import { HttpLambdaIntegration } from "aws-cdk-lib/aws-apigatewayv2-integrations"
import type { KeySchemaElement, Projection } from "@aws-sdk/client-dynamodb"
import { type Attribute, AttributeType, BillingMode, ProjectionType, Table } from "aws-cdk-lib/aws-dynamodb"
import { Rule, Schedule } from "aws-cdk-lib/aws-events"
import { LambdaFunction as LambdaTarget } from "aws-cdk-lib/aws-events-targets"
import { PolicyStatement, Role, ServicePrincipal } from "aws-cdk-lib/aws-iam"
import { Architecture, Code, Function as LambdaFunction, FunctionUrlAuthType, InvokeMode, LoggingFormat, Runtime } from "aws-cdk-lib/aws-lambda"
import { LogGroup, RetentionDays } from "aws-cdk-lib/aws-logs"
import { BlockPublicAccess, Bucket, BucketEncryption, ObjectOwnership } from "aws-cdk-lib/aws-s3"
import { ParameterTier, StringParameter } from "aws-cdk-lib/aws-ssm"
import type { Construct } from "constructs"
import {
  DEFAULT_CATALOGUE_PARAMETER,
  DEFAULT_OWNER_KEY_PARAMETER,
  DEFAULT_STRIPE_SECRET_KEY_PARAMETER,
  DEFAULT_STRIPE_WEBHOOK_SECRET_PARAMETER,
  ENV
} from "../src/ConfigNames.ts"
import { tableDefinition, TTL_ATTRIBUTE } from "@model-platform/dynamodb-stores"

export { DEFAULT_CATALOGUE_PARAMETER, DEFAULT_OWNER_KEY_PARAMETER, DEFAULT_STRIPE_SECRET_KEY_PARAMETER, DEFAULT_STRIPE_WEBHOOK_SECRET_PARAMETER, ENV }

/**
 * The table as the stores define it (keys, billing, indexes), for CloudFormation. The name is
 * CloudFormation's to choose; only the definition's shape is used.
 */
export const TABLE = tableDefinition("model-platform")

const ATTRIBUTE_TYPES: Record<string, AttributeType> = {
  S: AttributeType.STRING,
  N: AttributeType.NUMBER,
  B: AttributeType.BINARY
}

const attribute = (name: string): Attribute => {
  const type = TABLE.AttributeDefinitions?.find((definition) => definition.AttributeName === name)?.AttributeType
  const attributeType = type === undefined ? undefined : ATTRIBUTE_TYPES[type]
  if (attributeType === undefined) throw new Error(`tableDefinition declares no type for the key attribute ${name}`)
  return { name, type: attributeType }
}

const keyOf = (schema: ReadonlyArray<KeySchemaElement> | undefined, keyType: "HASH" | "RANGE"): Attribute | undefined => {
  const name = schema?.find((element) => element.KeyType === keyType)?.AttributeName
  return name === undefined ? undefined : attribute(name)
}

const partitionKeyOf = (schema: ReadonlyArray<KeySchemaElement> | undefined, what: string): Attribute => {
  const key = keyOf(schema, "HASH")
  if (key === undefined) throw new Error(`tableDefinition declares no partition key for ${what}`)
  return key
}

const projectionOf = (projection: Projection | undefined) => {
  switch (projection?.ProjectionType) {
    case "KEYS_ONLY":
      return { projectionType: ProjectionType.KEYS_ONLY }
    case "INCLUDE":
      return { projectionType: ProjectionType.INCLUDE, nonKeyAttributes: projection.NonKeyAttributes ?? [] }
    default:
      return { projectionType: ProjectionType.ALL }
  }
}

/** What the bundle (bundle.ts: `index.mjs`) must export. */
export const HANDLERS = {
  /** API Gateway HTTP API, payload format 2.0, buffered answer. */
  api: "index.handler",
  /** The HTTP API's /accounts routes: the same handler, in a function of its own. */
  accounts: "index.handler",
  /** Function URL with RESPONSE_STREAM: an `awslambda.streamifyResponse` handler. */
  stream: "index.streamHandler",
  /** An EventBridge schedule: one pass of the stablecoin deposit watcher. */
  watch: "index.watchHandler"
} as const


/** SSM String parameters: 4 KB on the standard tier, 8 KB on the advanced one. */
const STANDARD_TIER_LIMIT = 4096
const ADVANCED_TIER_LIMIT = 8192

export interface PlatformStackProps extends StackProps {
  /** A directory holding the bundled handlers (`index.mjs`), as bundle.ts writes it. */
  readonly bundleDir: string
  /** The SSM parameter holding the catalogue JSON. Default `/model-platform/catalogue`. */
  readonly catalogueParameterName?: string
  /**
   * When given, the stack creates the parameter with this JSON (minified; advanced tier above
   * 4 KB). Otherwise the parameter must exist before the first deploy (docs/lambda-deploy.md).
   */
  readonly catalogueJson?: string
  /**
   * The SSM SecureString parameter holding the owner key's secret (made with
   * scripts/new-owner-key.ts). Default `/model-platform/owner-key`. CloudFormation cannot create
   * SecureString parameters: the operator creates it before the first deploy (docs/lambda.md).
   */
  readonly ownerKeyParameterName?: string
  /**
   * The SSM SecureString parameters holding Stripe's secret key and the webhook endpoint's signing
   * secret, read only when the catalogue's card processor is "stripe" (docs/payments.md "Going
   * live with Stripe"). Defaults `/model-platform/stripe-secret-key` and
   * `/model-platform/stripe-webhook-secret`; the operator creates them, as the owner key.
   */
  readonly stripeSecretKeyParameterName?: string
  readonly stripeWebhookSecretParameterName?: string
  /**
   * ACCOUNTS_URL: the account service's public address (mailed links; passkeys are bound to its
   * host). Default: the HTTP API's endpoint + /accounts. Give it when a custom domain fronts the API.
   */
  readonly accountsUrl?: string
  /** Keep the table and the bucket when the stack is deleted (default true). */
  readonly retainData?: boolean
  /** Memory of both functions in MB (default 1024: more memory is more CPU, a faster cold start). */
  readonly memorySize?: number
  /** The streaming function's timeout (default 5 minutes; Lambda allows 15). */
  readonly streamTimeout?: Duration
  /**
   * More environment variables for every function: those the catalogue's "evm" stablecoin rail
   * names (each chain's rpc_url_env and xpub_env, docs/payments.md "Stablecoin on an EVM chain").
   */
  readonly environment?: Readonly<Record<string, string>>
  /** How often WatchFunction passes over the chains (default every minute; it does nothing without the "evm" rail). */
  readonly watchSchedule?: Duration
}

export class PlatformStack extends Stack {
  readonly table: Table
  readonly bucket: Bucket
  readonly role: Role
  readonly apiFunction: LambdaFunction
  readonly accountsFunction: LambdaFunction
  readonly streamFunction: LambdaFunction
  readonly watchFunction: LambdaFunction
  readonly httpApi: HttpApi
  readonly catalogueParameterName: string
  readonly ownerKeyParameterName: string

  constructor(scope: Construct, id: string, props: PlatformStackProps) {
    super(scope, id, props)
    const removalPolicy = (props.retainData ?? true) ? RemovalPolicy.RETAIN : RemovalPolicy.DESTROY

    // ---- data --------------------------------------------------------------------------------
    if (TABLE.BillingMode !== "PAY_PER_REQUEST") throw new Error("the stack deploys on-demand (PAY_PER_REQUEST) tables only")
    const sortKey = keyOf(TABLE.KeySchema, "RANGE")
    this.table = new Table(this, "Table", {
      partitionKey: partitionKeyOf(TABLE.KeySchema, "the table"),
      ...(sortKey === undefined ? {} : { sortKey }),
      billingMode: BillingMode.PAY_PER_REQUEST,
      pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
      timeToLiveAttribute: TTL_ATTRIBUTE,
      removalPolicy
    })
    for (const index of TABLE.GlobalSecondaryIndexes ?? []) {
      const indexSortKey = keyOf(index.KeySchema, "RANGE")
      this.table.addGlobalSecondaryIndex({
        indexName: index.IndexName!,
        partitionKey: partitionKeyOf(index.KeySchema, `the index ${index.IndexName}`),
        ...(indexSortKey === undefined ? {} : { sortKey: indexSortKey }),
        ...projectionOf(index.Projection)
      })
    }
    for (const index of TABLE.LocalSecondaryIndexes ?? []) {
      const indexSortKey = keyOf(index.KeySchema, "RANGE")
      if (indexSortKey === undefined) throw new Error(`the local index ${index.IndexName} has no sort key`)
      this.table.addLocalSecondaryIndex({ indexName: index.IndexName!, sortKey: indexSortKey, ...projectionOf(index.Projection) })
    }

    this.bucket = new Bucket(this, "Blobs", {
      blockPublicAccess: BlockPublicAccess.BLOCK_ALL,
      encryption: BucketEncryption.S3_MANAGED,
      enforceSSL: true,
      objectOwnership: ObjectOwnership.BUCKET_OWNER_ENFORCED,
      // A dataset upload is a multipart upload: one whose abort failed is cleared after a day.
      lifecycleRules: [{ abortIncompleteMultipartUploadAfter: Duration.days(1) }],
      removalPolicy
    })

    // ---- configuration -----------------------------------------------------------------------
    this.catalogueParameterName = props.catalogueParameterName ?? DEFAULT_CATALOGUE_PARAMETER
    const catalogueParameter = props.catalogueJson === undefined
      ? StringParameter.fromStringParameterName(this, "Catalogue", this.catalogueParameterName)
      : new StringParameter(this, "Catalogue", {
        parameterName: this.catalogueParameterName,
        description: "Model platform catalogue (JSON)",
        ...catalogueValue(props.catalogueJson)
      })
    // Created by the operator (CloudFormation cannot create SecureString parameters); only its ARN
    // is used here, never its value.
    this.ownerKeyParameterName = props.ownerKeyParameterName ?? DEFAULT_OWNER_KEY_PARAMETER
    const ownerKeyParameter = StringParameter.fromSecureStringParameterAttributes(this, "OwnerKey", {
      parameterName: this.ownerKeyParameterName
    })
    const stripeSecretKeyParameterName = props.stripeSecretKeyParameterName ?? DEFAULT_STRIPE_SECRET_KEY_PARAMETER
    const stripeWebhookSecretParameterName = props.stripeWebhookSecretParameterName ?? DEFAULT_STRIPE_WEBHOOK_SECRET_PARAMETER
    const stripeParameters = [
      StringParameter.fromSecureStringParameterAttributes(this, "StripeSecretKey", { parameterName: stripeSecretKeyParameterName }),
      StringParameter.fromSecureStringParameterAttributes(this, "StripeWebhookSecret", { parameterName: stripeWebhookSecretParameterName })
    ]
    const ownerEmail = new CfnParameter(this, "OwnerEmail", {
      type: "String",
      description: "Email of the owner account created at first start",
      allowedPattern: "^[^@\\s]+@[^@\\s]+$",
      constraintDescription: "an email address"
    })
    // The account service's mail. No echo: the URL holds the relay's password. The functions'
    // configuration still shows it to whoever may read that (docs/lambda-deploy.md).
    const smtpUrl = new CfnParameter(this, "SmtpUrl", {
      type: "String",
      noEcho: true,
      default: "",
      description: "smtp://user:pass@host:587 or smtps://user:pass@host:465 of the account service's mail; empty: no account service"
    })
    // The API function asks the accounts function for agent approvals as the platform's client:
    // one secret and one signing key for both (docs/agents.md "Approvals"). No echo: secrets.
    const platformClientSecret = new CfnParameter(this, "PlatformClientSecret", {
      type: "String",
      noEcho: true,
      default: "",
      description: "The platform's client secret at the agent approvals API (e.g. openssl rand -base64 32); empty: no agent approvals between functions"
    })
    const platformSigningKey = new CfnParameter(this, "PlatformSigningKey", {
      type: "String",
      noEcho: true,
      default: "",
      description: "The platform's service assertion key, a P-256 private JWK as JSON (adapters/lambda/scripts/new-signing-key.ts); empty: HTTP Basic only"
    })
    const smtpFrom = new CfnParameter(this, "SmtpFrom", {
      type: "String",
      default: "",
      description: "The From address of the account service's mail, e.g. Model Platform <no-reply@example.com>"
    })

    // ---- functions ---------------------------------------------------------------------------
    this.role = new Role(this, "FunctionRole", {
      assumedBy: new ServicePrincipal("lambda.amazonaws.com"),
      description: "Model platform functions: the table, the blob bucket, the catalogue and owner key parameters, their logs"
    })
    this.table.grantReadWriteData(this.role)
    this.bucket.grantReadWrite(this.role)
    // The owner key is a SecureString under the account's default key (aws/ssm), which lets any
    // principal allowed to GetParameter decrypt it: no KMS statement is needed.
    this.role.addToPolicy(new PolicyStatement({
      actions: ["ssm:GetParameter"],
      resources: [catalogueParameter.parameterArn, ownerKeyParameter.parameterArn, ...stripeParameters.map((p) => p.parameterArn)]
    }))

    const code = Code.fromAsset(props.bundleDir)
    const environment = {
      [ENV.table]: this.table.tableName,
      [ENV.bucket]: this.bucket.bucketName,
      [ENV.catalogueParameter]: this.catalogueParameterName,
      [ENV.ownerEmail]: ownerEmail.valueAsString,
      [ENV.ownerKeySecretId]: this.ownerKeyParameterName,
      [ENV.smtpUrl]: smtpUrl.valueAsString,
      [ENV.smtpFrom]: smtpFrom.valueAsString,
      [ENV.platformClientSecret]: platformClientSecret.valueAsString,
      [ENV.platformSigningKey]: platformSigningKey.valueAsString,
      ...props.environment,
      [ENV.stripeSecretKeyParameter]: stripeSecretKeyParameterName,
      [ENV.stripeWebhookSecretParameter]: stripeWebhookSecretParameterName,
      NODE_OPTIONS: "--enable-source-maps"
    }
    const makeFunction = (name: string, handler: string, timeout: Duration, description: string) => {
      const logGroup = new LogGroup(this, `${name}Logs`, {
        retention: RetentionDays.ONE_MONTH,
        removalPolicy: RemovalPolicy.DESTROY
      })
      logGroup.grantWrite(this.role)
      return new LambdaFunction(this, name, {
        description,
        runtime: Runtime.NODEJS_22_X,
        architecture: Architecture.ARM_64,
        code,
        handler,
        role: this.role,
        memorySize: props.memorySize ?? 1024,
        timeout,
        environment,
        logGroup,
        loggingFormat: LoggingFormat.JSON
      })
    }
    // API Gateway gives up after 29 s whatever the function does: a little more is enough
    this.apiFunction = makeFunction("ApiFunction", HANDLERS.api, Duration.seconds(30), "Model platform API (HTTP API)")
    // Its own function (same code and environment): its own logs, metrics and concurrency, so
    // the account pages can be watched or throttled apart from the API.
    this.accountsFunction = makeFunction(
      "AccountsFunction",
      HANDLERS.accounts,
      Duration.seconds(30),
      "Model platform account service (/accounts on the HTTP API)"
    )
    this.streamFunction = makeFunction(
      "StreamFunction",
      HANDLERS.stream,
      props.streamTimeout ?? Duration.minutes(5),
      "Model platform API, streaming (Function URL)"
    )
    // The deposit watcher: one pass a minute, never two at once in this function (a pass that
    // overruns the next tick is not doubled; a second process racing would be harmless anyway).
    this.watchFunction = makeFunction("WatchFunction", HANDLERS.watch, Duration.seconds(55), "Model platform stablecoin deposit watcher (scheduled)")
    new Rule(this, "WatchSchedule", {
      description: "Runs the stablecoin deposit watcher",
      schedule: Schedule.rate(props.watchSchedule ?? Duration.minutes(1)),
      targets: [new LambdaTarget(this.watchFunction, { retryAttempts: 0 })]
    })

    // ---- entry points ------------------------------------------------------------------------
    this.httpApi = new HttpApi(this, "HttpApi", {
      description: "Model platform API: every route to ApiFunction",
      defaultIntegration: new HttpLambdaIntegration("ApiIntegration", this.apiFunction)
    })
    const accountsIntegration = new HttpLambdaIntegration("AccountsIntegration", this.accountsFunction)
    for (const path of ["/accounts", "/accounts/{proxy+}"]) {
      this.httpApi.addRoutes({ path, methods: [HttpMethod.ANY], integration: accountsIntegration })
    }
    // Known only once the API exists; every function gets it (GET /identity's manage_url).
    const accountsUrl = props.accountsUrl ?? `${this.httpApi.apiEndpoint}/accounts`
    for (const fn of [this.apiFunction, this.accountsFunction, this.streamFunction, this.watchFunction]) {
      fn.addEnvironment(ENV.accountsUrl, accountsUrl)
    }
    // the app authenticates with its own API keys, as behind the HTTP API
    const streamUrl = this.streamFunction.addFunctionUrl({
      authType: FunctionUrlAuthType.NONE,
      invokeMode: InvokeMode.RESPONSE_STREAM
    })

    new CfnOutput(this, "ApiUrl", { value: this.httpApi.apiEndpoint, description: "HTTP API (buffered, 29 s)" })
    new CfnOutput(this, "StreamUrl", { value: streamUrl.url, description: "Function URL (streaming)" })
    new CfnOutput(this, "AccountsUrl", { value: accountsUrl, description: "The account service (sign up at /sign-up)" })
    new CfnOutput(this, "TableName", { value: this.table.tableName })
    new CfnOutput(this, "BucketName", { value: this.bucket.bucketName })
    new CfnOutput(this, "CatalogueParameter", { value: this.catalogueParameterName })
    new CfnOutput(this, "OwnerKeyParameter", { value: this.ownerKeyParameterName })
  }
}

/** The parameter's value (minified JSON) and the tier its size needs. */
export const catalogueValue = (json: string): { readonly stringValue: string; readonly tier: ParameterTier } => {
  const stringValue = JSON.stringify(JSON.parse(json))
  const size = Buffer.byteLength(stringValue)
  if (size > ADVANCED_TIER_LIMIT) {
    throw new Error(
      `the catalogue is ${size} bytes minified; an SSM parameter holds at most ${ADVANCED_TIER_LIMIT} ` +
        "(docs/lambda-deploy.md, Limits)"
    )
  }
  return { stringValue, tier: size > STANDARD_TIER_LIMIT ? ParameterTier.ADVANCED : ParameterTier.STANDARD }
}
