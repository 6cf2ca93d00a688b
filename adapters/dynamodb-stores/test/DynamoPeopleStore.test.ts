/**
 * The people store on DynamoDB Local: the shared contract suite (concurrent removals and
 * consumptions race as transactions and conditional updates), then the items themselves: TTLs on
 * sessions and tokens, and a session or token asked for after its expiry, while its item is still
 * there (DynamoDB deletes expired items up to days later), not answered.
 */
import { assert, layer } from "@effect/vitest"
import { GetCommand } from "@aws-sdk/lib-dynamodb"
import { PeopleStore } from "@model-platform/core/accounts"
import { PeopleFixtures, peopleStoreContract } from "@model-platform/contract-kit/PeopleContract"
import { Effect, Layer } from "effect"
import { PeopleKeys, PeopleStoreDynamo, ttlOf } from "../src/DynamoPeopleStore.ts"
import { DynamoConfig, TTL_ATTRIBUTE } from "../src/DynamoTable.ts"
import { useDynamoLocal } from "./dynamoLocal.ts"

const { freshTable } = useDynamoLocal("people-test")
const FreshTable = freshTable()

peopleStoreContract("PeopleStoreDynamo on DynamoDB Local", PeopleStoreDynamo.pipe(Layer.provide(FreshTable)))

layer(PeopleStoreDynamo.pipe(Layer.provideMerge(FreshTable)), { excludeTestServices: true, timeout: "60 seconds" })(
  "PeopleStoreDynamo items",
  (it) => {
    it.effect("sessions and tokens carry a TTL at their expiry; an item past it is still refused", () =>
      Effect.gen(function*() {
        const store = yield* PeopleStore
        const { client, tableName } = yield* DynamoConfig
        const { at, freshSession, freshToken, insertedPerson } = PeopleFixtures
        const { person } = yield* insertedPerson()
        // Expiring in an hour: DynamoDB Local's TTL reaper deletes items already past their TTL,
        // which would race the reads below. The refusals are asked for after the expiry instead.
        const expiry = at(3_600_000)
        const afterExpiry = at(3_600_000 + 60_000)
        const session = yield* freshSession(person.id, { expires_at: expiry })
        yield* store.createSession(session)
        const token = yield* freshToken("confirm_email", { expires_at: expiry })
        yield* store.issueToken(token)
        const item = (key: { pk: string; sk: string }) =>
          Effect.promise(() => client.send(new GetCommand({ TableName: tableName, Key: key, ConsistentRead: true })))
        const sessionItem = yield* item(PeopleKeys.session(session.token_hash))
        assert.strictEqual(sessionItem.Item?.[TTL_ATTRIBUTE], ttlOf(session.expires_at))
        const pointer = yield* item(PeopleKeys.personSession(person.id, session.token_hash))
        assert.strictEqual(pointer.Item?.[TTL_ATTRIBUTE], ttlOf(session.expires_at))
        const tokenItem = yield* item(PeopleKeys.token(token.token_hash))
        assert.strictEqual(tokenItem.Item?.[TTL_ATTRIBUTE], ttlOf(token.expires_at))
        assert.isDefined(yield* store.getSession(session.token_hash, at()))
        assert.isUndefined(yield* store.getSession(session.token_hash, afterExpiry))
        assert.deepStrictEqual(
          yield* store.consumeToken(token.token_hash, "confirm_email", afterExpiry),
          { _tag: "Refused", reason: "expired" }
        )
      }))
  }
)
