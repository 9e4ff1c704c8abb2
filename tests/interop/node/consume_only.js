'use strict';
// Driven by tests/interop/test_ali_ons_cross.py: an ali-ons push consumer (from the first offset) reads
// EXPECT messages of TOPIC that orbitmq's Python producer sent, prints one JSON line per run and exits.
// Each received message is reported with its body (or its length and a prefix when long), tags, keys,
// properties, msgId (computed by ali-ons from store host + commit-log offset), queue id and offset.
const { Consumer } = require('ali-ons');

const nameSrv = process.env.NAMESRV;
const topic = process.env.TOPIC;
const expect = Number(process.env.EXPECT || '10');
const group = process.env.GROUP || 'GID_ORBITMQ_ALI_CONSUMER';
const timeoutMs = Number(process.env.TIMEOUT_MS || '40000');
const httpclient = {};

function finish(result, code) {
  process.stdout.write(JSON.stringify(result) + '\n');
  process.exit(code);
}

(async () => {
  const result = { received: [], errors: [] };
  const timer = setTimeout(() => {
    result.errors.push('timeout');
    finish(result, 2);
  }, timeoutMs);
  const consumer = new Consumer({ nameSrv, httpclient, consumerGroup: group, consumeFromWhere: 'CONSUME_FROM_FIRST_OFFSET' });
  consumer.on('error', err => result.errors.push('consumer: ' + err.message));
  const seen = new Set();
  consumer.subscribe(topic, '*', async msg => {
    const id = msg.queueId + ':' + msg.queueOffset;
    if (seen.has(id)) return;
    seen.add(id);
    const body = msg.body.toString();
    result.received.push({
      body: body.length > 200 ? body.slice(0, 20) : body,
      bodyLength: msg.body.length,
      tags: msg.tags, keys: msg.keys, properties: msg.properties, msgId: msg.msgId,
      queueId: msg.queueId, queueOffset: Number(msg.queueOffset), sysFlag: msg.sysFlag,
    });
    if (seen.size >= expect) {
      clearTimeout(timer);
      setTimeout(async () => {
        try {
          await consumer.close();
        } catch (err) {
          result.errors.push('close: ' + err.message);
        }
        finish(result, 0);
      }, 300);
    }
  });
  await consumer.ready();
})().catch(err => {
  process.stdout.write(JSON.stringify({ received: [], errors: [ 'fatal: ' + (err && err.stack || err) ] }) + '\n');
  process.exit(1);
});
