"""The palette of each game's still pictures (pbem.games.picture), as `pbem.games.picture.sampled_palette`
gives it: kept here, not taken at start, since drawing the sample and finding its palette take
half a second that a new process would spend before its first mail. Written by
`python3 -m pbem.games.picture` (again whenever the pictures' colours change; a test checks that
this palette still holds every colour of the sample)."""

PALETTES = {
    "kardinal-koenig": bytes.fromhex(
        "1d1d1d2a6fcb2f93453484443b32263d9a504a403655555363636171716e7d42a67f7f7c8655b08a332e8a5b2e8a712e"
        "8c7b628e8d8a9c9b979dbfd8aaa9a5b8b7b2c3daebc5e8ccc6c5c0cfe2f0d4d3ced7352bd7c7e5d9463edfe4e3e2e1db"
        "e6ddccede7d9f09236f0efe9f1e3bcf2bebbf2c12ef3e7c6f6f1e7f9d6b3faf8f3fffdf7fffffffefaf3f5f9f1fbf9f4"
        "fcf7eafcf3eefcf2e4f5f0f3fbece7f9f2dffaeedafae5e1f5eacdfbe7d2eff7ebf3f1e9f2ede1f0eaf1f2ece0000000"
        "efe7daf9e1ddf2e6c3e5f3e4e8e5dedbefddd2edd5cbe8d0f8dcd8e9e1eeeae1d3fadfc4eae1d2e9dbb5e8e3daf6d3d0"
        "e4d9ebf9dab9e4d5aff5cdc9efcdabcad9e3dcd8ccc6d1d9ded0e8ddcea6d2cec6bfe0c4c6d9e8badabeb6d1d8b8d3b8"
        "aad5b2a5c9c2f3c4c1ddbfc3d0c0dccecac2c2c7cbc7c5c1cab9d2000000d8ceb3d6c9a6c7c3b9e3c2a0d6c698cebf9a"
        "e9b7b3000000e3ada9d9aaa4000000c0bcb2bca5cfdab793cfad98c2b696000000000000c9af82bdc3bfb5ccb1b5bcd5"
        "b0c2a7a6a6c7b9b8b2c0b3c1b4b7a8bbaab4b0aba1b4aca9c0ac8eb9ad799fbed8a0ceaaa5b9a1a6b094b2a1a491c49c"
        "8fb2bd7eb88b82b49c6bab7bdb9995ad94c3c39c93b7a26caea1b5aba090b59f84c49677d9ae2ce16e67ac999eae8b8d"
        "b392639b91b5a19e999c958ca1a185ad977fa59678908492a891789c7cb7a4817ea58c77aa935b9f8b72a5895391a490"
        "9a957c8e89ab9d976a9c8c7f9489729b7c5d9a8a588b70a89a856d9478719180688875689882467e99a16f9bc07f955e"
        "5a9e6987888082865c6a837a52956149935640894e2d813f4f81a33e7e46c07b77d18a31ac6b67a57851a474779b734c"
        "b5782f946b41827e767370697f6f7c8d773781725d786a5ba05e5c8f633795652c7d619a6d635975563a6a5d4f9f5552"
        "984945c13c348e3a34714e9080582a66466f597a6a6262615d63513f5f7524619026446b5754556954425f554a544a3f"
        "52544c39653b6742845e3a7d52395f5c41284a4647464644424e36453c2e265330412c4f4b2a233938392d2d2b272624"),
}
