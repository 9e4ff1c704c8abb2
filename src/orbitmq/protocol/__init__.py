"""orbitmq.protocol: RocketMQ 4.x remoting protocol, sans-IO (bytes in, values out).

- `codes`: request/response codes, LanguageCode, SerializeType, flag bits, versions;
  `perm`: the permission bits of topics and brokers (PermName).
- `frames`: FrameDecoder, cutting a byte stream into frames.
- `command`: RemotingCommand and its JSON / ROCKETMQ header serializations.
- `bodies` (+ `bodies_core`, `bodies_client`, `bodies_admin`, `properties_text`, `body_fields`):
  the JSON bodies; `java_json`: reading/writing JSON as fastjson does.

Nothing here touches sockets, asyncio or files.
"""
