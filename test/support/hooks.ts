/**
 * Mocha root hooks shared by every suite. Tests that need a real engine read its URL from the environment
 * (`TEST_DATABASE_URL`, `TEST_REDIS_URL`, `TEST_AMQP_URL`, defaulting to the CI machine's local servers).
 */
export const mochaHooks = {};
