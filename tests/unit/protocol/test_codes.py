"""Code tables against the fact sheet (sections 1.5, 1.6, 2.1, 2.2)."""

from orbitmq.protocol.codes import (
    CURRENT_VERSION,
    RPC_ONEWAY,
    RPC_TYPE,
    V3_4_9,
    V4_9_4,
    LanguageCode,
    RequestCode,
    ResponseCode,
    SerializeType,
    version_desc,
)


def test_request_codes_sample_matches_fact_sheet() -> None:
    expected = {
        "SEND_MESSAGE": 10,
        "PULL_MESSAGE": 11,
        "QUERY_MESSAGE": 12,
        "UPDATE_CONSUMER_OFFSET": 15,
        "HEART_BEAT": 34,
        "GET_ALL_DELAY_OFFSET": 45,
        "GET_BROKER_CLUSTER_ACL_CONFIG": 54,
        "REGISTER_BROKER": 103,
        "GET_ROUTEINFO_BY_TOPIC": 105,
        "GET_KVLIST_BY_NAMESPACE": 219,
        "GET_TOPICS_BY_CLUSTER": 224,
        "SEND_MESSAGE_V2": 310,
        "SEND_BATCH_MESSAGE": 320,
        "QUERY_DATA_VERSION": 322,
        "ADD_WRITE_PERM_OF_BROKER": 327,
        "DELETE_EXPIRED_COMMITLOG": 329,
    }
    for name, value in expected.items():
        assert RequestCode[name] == value
    assert len(RequestCode) == 96
    assert len({c.value for c in RequestCode}) == len(RequestCode)


def test_response_codes_sample_matches_fact_sheet() -> None:
    assert ResponseCode.SUCCESS == 0
    assert ResponseCode.REQUEST_CODE_NOT_SUPPORTED == 3
    assert ResponseCode.PULL_NOT_FOUND == 19
    assert ResponseCode.PULL_OFFSET_MOVED == 21
    assert ResponseCode.QUERY_NOT_FOUND == 22
    assert ResponseCode.FILTER_DATA_NOT_LATEST == 28
    assert ResponseCode.TRANSACTION_STATE_UNKNOW == 202
    assert ResponseCode.UPDATE_GLOBAL_WHITE_ADDRS_CONFIG_FAILED == 211
    assert ResponseCode.FLOW_CONTROL == 215
    assert len(ResponseCode) == 37


def test_language_serialize_flags_versions() -> None:
    assert [c.value for c in LanguageCode] == list(range(13))
    assert LanguageCode.PYTHON == 3 and LanguageCode.RUST == 12
    assert SerializeType.JSON == 0 and SerializeType.ROCKETMQ == 1
    assert (RPC_TYPE, RPC_ONEWAY) == (1, 2)
    assert CURRENT_VERSION == 407
    assert (V3_4_9, V4_9_4) == (121, 401)
    assert version_desc(407) == "V4_9_7"
    assert version_desc(406) == "V4_9_7_SNAPSHOT"
    assert version_desc(100000) == "V100000"
