/// What exporting a gateway-generated secret means, in the words the refusal,
/// the `--allow-v1` warning and the flag's help share.
package enum ShareLinkWarning {
    package static let generated =
        "A door that imports its share link (from here or from a phone) holds it as imported and accepts v1 "
        + "stickers signed with it: any v2 sticker of this door, read with a phone, its &u=… cut off and "
        + "written onto a blank NTAG, opens that door without a registry row, and revoking the sticker's UID "
        + "does not stop the copy. This door keeps the key v2-only."
}
