package pgstore

// FollowLimit exports followLimit to the external tests.
const FollowLimit = followLimit
