import { managementUrlFor } from '../../transport/amqp/management-api.js';

/**
 * Where the real engines are for tests. CI starts them on their default local ports (see .ci/run). A developer
 * without one of them sets TEST_SKIP_<ENGINE>=1 to run the embedded half of the contract suites only.
 */
export const engines = {
  postgres: process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres',
  redis: process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379',
  amqp: process.env.TEST_AMQP_URL ?? 'amqp://guest:guest@127.0.0.1:5672',
};

/** RabbitMQ's management API of that broker (port 15672 of its host unless TEST_RABBITMQ_MANAGEMENT_URL says where). */
export const amqpManagementUrl = process.env.TEST_RABBITMQ_MANAGEMENT_URL ?? managementUrlFor(engines.amqp);

export const skipEngine = {
  postgres: process.env.TEST_SKIP_POSTGRES === '1',
  redis: process.env.TEST_SKIP_REDIS === '1',
  amqp: process.env.TEST_SKIP_AMQP === '1',
};
