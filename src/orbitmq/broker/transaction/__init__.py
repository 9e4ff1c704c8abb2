"""The broker's transactional messages (half/op records, END_TRANSACTION, the check-back service)."""
