// PieceGate: pieces granted by rank, then by a read's start; a raised rank
// is followed; a waiting read is woken when a piece lands; a finished read
// holds no one back.

#include "common/io/piece_gate.h"

#include <atomic>
#include <chrono>
#include <thread>

#include "gtest/gtest.h"

namespace warp {
namespace {

const ReadRank kDemand(0), kCertain(1), kGuess(2);

TEST(PieceGateTest, TheReadThatStartedFirstGoesFirst) {
  PieceGate gate(1);
  PieceGate::Read first(&gate, kDemand, /*pieces=*/2);
  PieceGate::Read second(&gate, kDemand, /*pieces=*/1);
  EXPECT_FALSE(second.Take(/*wait=*/false)) << "the first read still has pieces to send";
  ASSERT_TRUE(first.Take(false));
  first.Landed();
  EXPECT_FALSE(second.Take(false));
  ASSERT_TRUE(first.Take(false));
  EXPECT_FALSE(second.Take(false)) << "the one piece is in flight";
  first.Landed();
  EXPECT_TRUE(second.Take(false)) << "the first read has sent everything";
}

TEST(PieceGateTest, ALowerRankOvertakesAReadAlreadyUnderWay) {
  PieceGate gate(2);
  PieceGate::Read guess(&gate, kGuess, /*pieces=*/24);
  ASSERT_TRUE(guess.Take(false));
  ASSERT_TRUE(guess.Take(false));
  PieceGate::Read demand(&gate, kDemand, /*pieces=*/2);
  EXPECT_FALSE(demand.Take(false)) << "both pieces are in flight";
  guess.Landed();
  EXPECT_FALSE(guess.Take(false)) << "the demand read wants the free piece";
  ASSERT_TRUE(demand.Take(false));
  guess.Landed();
  ASSERT_TRUE(demand.Take(false));
  demand.Landed();
  EXPECT_TRUE(guess.Take(false)) << "the demand read has sent everything";
}

TEST(PieceGateTest, ARaisedReadGoesBeforeTheReadsOfItsNewRankThatStartedLater) {
  PieceGate gate(1);
  ReadRank rank(2);  // a guess under way
  PieceGate::Read guess(&gate, rank, /*pieces=*/4);
  ASSERT_TRUE(guess.Take(false));
  PieceGate::Read demand(&gate, kDemand, /*pieces=*/4);
  guess.Landed();
  EXPECT_FALSE(guess.Take(false)) << "the demand read goes first";
  rank.Raise(0);  // a demand joined the guess
  rank.Raise(1);
  EXPECT_EQ(rank.get(), 0u) << "a rank is never lowered";
  EXPECT_TRUE(guess.Take(false)) << "raised, it started before the demand read";
  guess.Landed();
  EXPECT_FALSE(demand.Take(false)) << "the raised read has pieces left";
}

TEST(PieceGateTest, AReadWaitingAtTheGateIsGrantedAtItsRaisedRank) {
  PieceGate gate(2);
  ReadRank rank(2);
  PieceGate::Read guess(&gate, rank, /*pieces=*/1);
  PieceGate::Read demand(&gate, kDemand, /*pieces=*/8);
  ASSERT_TRUE(demand.Take(false));
  std::atomic<bool> granted{false};
  std::thread waiter([&] {
    granted = guess.Take(/*wait=*/true);
    guess.Landed();
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_FALSE(granted) << "granted before the demand read sent its pieces";
  rank.Raise(0);    // it started before the demand read
  demand.Landed();  // any landing wakes the waiter
  waiter.join();
  EXPECT_TRUE(granted);
}

TEST(PieceGateTest, AWaitingReadIsWokenWhenAPieceLands) {
  PieceGate gate(1);
  PieceGate::Read first(&gate, kDemand, 1);
  ASSERT_TRUE(first.Take(false));
  std::atomic<bool> granted{false};
  std::thread waiter([&] {
    PieceGate::Read second(&gate, kDemand, 1);
    granted = second.Take(/*wait=*/true);
    second.Landed();
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_FALSE(granted) << "granted with no piece free";
  first.Landed();
  waiter.join();
  EXPECT_TRUE(granted);
}

TEST(PieceGateTest, AFinishedReadHoldsNoOneBack) {
  PieceGate gate(4);
  PieceGate::Read later(&gate, kCertain, 1);
  {
    PieceGate::Read failed(&gate, kDemand, 8);  // a read that stopped before sending anything
    EXPECT_FALSE(later.Take(false));
  }
  EXPECT_TRUE(later.Take(false));
}

TEST(PieceGateTest, APieceSentAgainWantsAnotherGrant) {
  PieceGate gate(1);
  PieceGate::Read first(&gate, kDemand, 1);
  PieceGate::Read second(&gate, kDemand, 1);
  ASSERT_TRUE(first.Take(false));
  first.Landed();
  first.Again();  // a short read: the rest of the piece
  EXPECT_FALSE(second.Take(false));
  EXPECT_TRUE(first.Take(false));
}

TEST(PieceGateTest, ACapacityOfZeroIsOne) {
  PieceGate gate(0);
  EXPECT_EQ(gate.capacity(), 1u);
  PieceGate::Read read(&gate, kDemand, 1);
  EXPECT_TRUE(read.Take(false));
}

}  // namespace
}  // namespace warp
