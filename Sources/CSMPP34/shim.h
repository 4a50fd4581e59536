#ifndef ISSUERD_CSMPP34_SHIM_H
#define ISSUERD_CSMPP34_SHIM_H
#include <stdint.h>
#include <string.h>
#include <libsmpp34/smpp34.h>
#include <libsmpp34/smpp34_structs.h>
#include <libsmpp34/smpp34_params.h>

/* libsmpp34's PDUs are structs of fixed char arrays, which Swift sees as tuples: these fill and
   read them, and leave every encoding and decoding to smpp34_pack and smpp34_unpack. Each
   returns 0 on success, -1 when libsmpp34 refuses (smpp34_strerror says why). */

static inline void issuerd_smpp_copy(uint8_t *field, size_t capacity, const char *text) {
    memset(field, 0, capacity);
    if (text) strncpy((char *)field, text, capacity - 1);
}

/* bind_transceiver, SMPP 3.4 (interface_version 0x34). */
static inline int issuerd_smpp_pack_bind_transceiver(uint8_t *buffer, int capacity, int *length, uint32_t sequence,
                                                     const char *system_id, const char *password,
                                                     const char *system_type) {
    bind_transceiver_t pdu;
    memset(&pdu, 0, sizeof pdu);
    pdu.command_id = BIND_TRANSCEIVER;
    pdu.sequence_number = sequence;
    issuerd_smpp_copy(pdu.system_id, sizeof pdu.system_id, system_id);
    issuerd_smpp_copy(pdu.password, sizeof pdu.password, password);
    issuerd_smpp_copy(pdu.system_type, sizeof pdu.system_type, system_type);
    pdu.interface_version = 0x34;
    return smpp34_pack(BIND_TRANSCEIVER, buffer, capacity, length, &pdu);
}

/* A PDU of a header only: enquire_link, enquire_link_resp, unbind, unbind_resp, generic_nack. */
static inline int issuerd_smpp_pack_header(uint8_t *buffer, int capacity, int *length, uint32_t command_id,
                                           uint32_t status, uint32_t sequence) {
    enquire_link_t pdu;
    memset(&pdu, 0, sizeof pdu);
    pdu.command_id = command_id;
    pdu.command_status = status;
    pdu.sequence_number = sequence;
    return smpp34_pack(command_id, buffer, capacity, length, &pdu);
}

/* submit_sm with one short_message of at most 254 bytes (a UDH counted in it when esm_class
   has 0x40); registered_delivery 1 asks for a receipt either way. */
static inline int issuerd_smpp_pack_submit_sm(uint8_t *buffer, int capacity, int *length, uint32_t sequence,
                                              const char *source, uint8_t source_ton, uint8_t source_npi,
                                              const char *destination, uint8_t destination_ton,
                                              uint8_t destination_npi, uint8_t esm_class,
                                              uint8_t registered_delivery, uint8_t data_coding,
                                              const uint8_t *message, int message_length) {
    if (message_length < 0 || message_length > 254) return -1;
    submit_sm_t pdu;
    memset(&pdu, 0, sizeof pdu);
    pdu.command_id = SUBMIT_SM;
    pdu.sequence_number = sequence;
    issuerd_smpp_copy(pdu.source_addr, sizeof pdu.source_addr, source);
    pdu.source_addr_ton = source_ton;
    pdu.source_addr_npi = source_npi;
    issuerd_smpp_copy(pdu.destination_addr, sizeof pdu.destination_addr, destination);
    pdu.dest_addr_ton = destination_ton;
    pdu.dest_addr_npi = destination_npi;
    pdu.esm_class = esm_class;
    pdu.registered_delivery = registered_delivery;
    pdu.data_coding = data_coding;
    pdu.sm_length = (uint8_t)message_length;
    memcpy(pdu.short_message, message, (size_t)message_length);
    return smpp34_pack(SUBMIT_SM, buffer, capacity, length, &pdu);
}

/* deliver_sm_resp (its message_id is unused and empty). */
static inline int issuerd_smpp_pack_deliver_sm_resp(uint8_t *buffer, int capacity, int *length, uint32_t status,
                                                    uint32_t sequence) {
    deliver_sm_resp_t pdu;
    memset(&pdu, 0, sizeof pdu);
    pdu.command_id = DELIVER_SM_RESP;
    pdu.command_status = status;
    pdu.sequence_number = sequence;
    return smpp34_pack(DELIVER_SM_RESP, buffer, capacity, length, &pdu);
}

/* The message id of a submit_sm_resp (empty when the SMSC refused it). */
static inline int issuerd_smpp_unpack_submit_sm_resp(const uint8_t *buffer, int length, char *message_id,
                                                     int capacity) {
    submit_sm_resp_t pdu;
    memset(&pdu, 0, sizeof pdu);
    if (smpp34_unpack(SUBMIT_SM_RESP, &pdu, buffer, length) != 0) return -1;
    memset(message_id, 0, (size_t)capacity);
    strncpy(message_id, (const char *)pdu.message_id, (size_t)capacity - 1);
    return 0;
}

/* bind_transceiver_resp: only whether it decodes (the status is in the header). */
static inline int issuerd_smpp_unpack_bind_transceiver_resp(const uint8_t *buffer, int length) {
    bind_transceiver_resp_t pdu;
    memset(&pdu, 0, sizeof pdu);
    if (smpp34_unpack(BIND_TRANSCEIVER_RESP, &pdu, buffer, length) != 0) return -1;
    destroy_tlv(pdu.tlv);
    return 0;
}

/* A deliver_sm: its esm_class, its short_message (the receipt text) and, when present, the
   receipted_message_id and message_state TLVs (message_state 0 when absent). */
static inline int issuerd_smpp_unpack_deliver_sm(const uint8_t *buffer, int length, uint8_t *esm_class,
                                                 uint8_t *text, int text_capacity, int *text_length,
                                                 char *receipted_id, int id_capacity, uint8_t *message_state) {
    deliver_sm_t pdu;
    memset(&pdu, 0, sizeof pdu);
    if (smpp34_unpack(DELIVER_SM, &pdu, buffer, length) != 0) return -1;
    *esm_class = pdu.esm_class;
    int count = pdu.sm_length < text_capacity ? pdu.sm_length : text_capacity;
    memcpy(text, pdu.short_message, (size_t)count);
    *text_length = count;
    memset(receipted_id, 0, (size_t)id_capacity);
    *message_state = 0;
    tlv_t *tlv;
    smpp34_tlv_for_each(tlv, pdu.tlv) {
        if (tlv->tag == TLVID_receipted_message_id) {
            int n = tlv->length < id_capacity - 1 ? tlv->length : id_capacity - 1;
            memcpy(receipted_id, tlv->value.octet, (size_t)n);
        } else if (tlv->tag == TLVID_message_state) {
            *message_state = tlv->value.val08;
        }
    }
    destroy_tlv(pdu.tlv);
    return 0;
}
#endif
